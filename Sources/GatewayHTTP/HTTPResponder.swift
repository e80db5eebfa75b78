// The one-shot answer channel a handler gets with each request.

/// Answers one request, exactly once, from any thread.
///
/// The first call to `respond`, `forward` or `fail` wins; later calls are ignored and return false.
/// The variants with a `context` replace the request's context (what `requestCompleted` gets);
/// the others leave it as the head decision (`HTTPHeadDecision`) gave it. If the responder (every
/// copy of it) is released without an answer the client gets 500 `handler_did_not_respond` (a
/// handler bug must not hang the connection), the context unchanged. When the client has gone away
/// meanwhile, the answer is dropped silently (and so is its context).
///
/// A value over the request's `HTTPAnswerChannel`; its methods are inlinable, so that the context is
/// boxed where its type is known (no generic code runs per request in the connections).
public struct HTTPResponder<Context: Sendable>: Sendable {
    @usableFromInline let channel: HTTPAnswerChannel

    @usableFromInline init(_ channel: HTTPAnswerChannel) {
        self.channel = channel
    }

    /// Sends a complete response (see `HTTPResponse` for how it is framed); the context stays.
    /// - Returns: false when this responder had already answered.
    @inlinable @discardableResult
    public func respond(_ response: consuming HTTPResponse) -> Bool {
        channel.answer(.response(response), context: nil)
    }

    /// `respond(_:)`, the request's context replaced by `context` (e.g. with the verdict for the
    /// handler's access log).
    @inlinable @discardableResult
    public func respond(_ response: consuming HTTPResponse, context: consuming Context) -> Bool {
        channel.answer(.response(response), context: HTTPTypedContextBox(context))
    }

    /// Sends the request upstream and streams the upstream response back (see `HTTPForward`); the
    /// context stays.
    /// - Returns: false when this responder had already answered.
    @inlinable @discardableResult
    public func forward(_ forward: consuming HTTPForward) -> Bool {
        channel.answer(.forward(consume forward), context: nil)
    }

    /// `forward(_:)`, the request's context replaced by `context`.
    @inlinable @discardableResult
    public func forward(_ forward: consuming HTTPForward, context: consuming Context) -> Bool {
        channel.answer(.forward(consume forward), context: HTTPTypedContextBox(context))
    }

    /// Answers with the server's own error rendering for `error` (e.g. `.upstreamUnavailable`); the
    /// context stays.
    /// - Returns: false when this responder had already answered.
    @inlinable @discardableResult
    public func fail(_ error: HTTPError) -> Bool {
        channel.answer(.error(error), context: nil)
    }
}
