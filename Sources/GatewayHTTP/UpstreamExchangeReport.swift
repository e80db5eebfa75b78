// The outcome of one upstream exchange, for metrics.

/// What happened to one exchange with an upstream (one forwarded request, its single retry
/// included), reported to `UpstreamConfiguration.observer` on the event loop that ran it, once, when
/// the exchange ends: the response was complete, it failed, or the downstream went away.
public struct UpstreamExchangeReport: Sendable {
    /// How the exchange ended.
    public enum Outcome: Sendable, Equatable {
        /// The whole response arrived.
        case completed
        /// It failed with this error (`UpstreamPool` lists them; mid-response failures included).
        case failed(HTTPError)
        /// The downstream client went away (or reset its stream) before the response was complete.
        case cancelled
    }

    /// `UpstreamConfiguration.name`.
    public var upstream: String
    /// `EventLoop.index` of the loop it ran on.
    public var loopIndex: Int
    /// How it ended.
    public var outcome: Outcome
    /// The response status, 0 when no response head arrived.
    public var status: Int
    /// Nanoseconds from the start of the exchange to the response head or, without one, to its end.
    public var nanoseconds: UInt64
    /// Whether it was retried once on a fresh connection (stale pooled connection).
    public var retried: Bool
    /// Behind `.failed(.upstreamBadResponse)`: what the response parser found wrong
    /// (`HTTP1ResponseParser.failureDetail`: `.badTransferEncoding`, `.headerTooLarge`,
    /// `.badRequestLine` for a bad status line, ...); nil otherwise.
    public var detail: HTTPError? = nil
}
