// Where a request's answer goes.

/// How an answer reaches the connection (an HTTP/1.1 connection, or an HTTP/2 connection with the
/// stream identifier as `sequence`).
protocol HTTPResponseSink: AnyObject, Sendable {
    /// Delivers the answer for request `sequence` (called from any thread, once); `context` (the
    /// handler's context, boxed) replaces the request's context when not nil.
    func deliver(_ answer: consuming HTTPAnswer, context: HTTPContextBox?, sequence: UInt64)
}
