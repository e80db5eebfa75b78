// The one-shot answer channel a handler gets with each request.

import GatewayIO
import Synchronization

/// A handler's answer to one request, as its responder hands it to the connection.
enum HTTPAnswer: Sendable {
    case response(HTTPResponse)
    case forward(HTTPForward)
    case error(HTTPError)
}

/// How a responder's answer reaches the connection (an HTTP/1.1 connection, or an HTTP/2 connection
/// with the stream identifier as `sequence`).
protocol HTTPResponseSink<Context>: AnyObject, Sendable {
    /// The handler's per-request context (`HTTPHandler.RequestContext`).
    associatedtype Context: Sendable
    /// Delivers the answer for request `sequence` (called from any thread, once); `context` replaces
    /// the request's context when not nil.
    func deliver(_ answer: HTTPAnswer, context: Context?, sequence: UInt64)
}

/// Answers one request, exactly once, from any thread.
///
/// The first call to `respond`, `forward` or `fail` wins; later calls are ignored and return false.
/// The variants with a `context` replace the request's context (what `requestCompleted` gets);
/// the others leave it as the head decision (`HTTPHeadDecision`) gave it. If the responder is
/// released without an answer the client gets 500 `handler_did_not_respond` (a handler bug must not
/// hang the connection), the context unchanged. When the client has gone away meanwhile, the answer
/// is dropped silently (and so is its context).
public final class HTTPResponder<Context: Sendable>: Sendable {
    private let sink: any HTTPResponseSink<Context>
    private let sequence: UInt64
    private let answered = Atomic<Bool>(false)

    init(sink: any HTTPResponseSink<Context>, sequence: UInt64) {
        self.sink = sink
        self.sequence = sequence
    }

    /// Sends a complete response (see `HTTPResponse` for how it is framed); the context stays.
    /// - Returns: false when this responder had already answered.
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool {
        answer(.response(response), context: nil)
    }

    /// `respond(_:)`, the request's context replaced by `context` (e.g. with the verdict for the
    /// handler's access log).
    @discardableResult
    public func respond(_ response: HTTPResponse, context: Context) -> Bool {
        answer(.response(response), context: context)
    }

    /// Sends the request upstream and streams the upstream response back (see `HTTPForward`); the
    /// context stays.
    /// - Returns: false when this responder had already answered.
    @discardableResult
    public func forward(_ forward: HTTPForward) -> Bool {
        answer(.forward(forward), context: nil)
    }

    /// `forward(_:)`, the request's context replaced by `context`.
    @discardableResult
    public func forward(_ forward: HTTPForward, context: Context) -> Bool {
        answer(.forward(forward), context: context)
    }

    /// Answers with the server's own error rendering for `error` (e.g. `.upstreamUnavailable`); the
    /// context stays.
    /// - Returns: false when this responder had already answered.
    @discardableResult
    public func fail(_ error: HTTPError) -> Bool {
        answer(.error(error), context: nil)
    }

    private func answer(_ a: HTTPAnswer, context: Context?) -> Bool {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        sink.deliver(a, context: context, sequence: sequence)
        return true
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            sink.deliver(.error(.handlerDidNotRespond), context: nil, sequence: sequence)
        }
    }
}
