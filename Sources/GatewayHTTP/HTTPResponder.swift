// The one-shot answer channel a handler gets with each request.

import GatewayIO
import Synchronization

/// How a responder's answer reaches the connection (an HTTP/1.1 connection, or an HTTP/2 connection
/// with the stream identifier as `sequence`).
protocol HTTPResponseSink: AnyObject, Sendable {
    /// Delivers the answer for request `sequence` (called from any thread, once).
    func deliver(_ answer: HTTPResponder.Answer, annotation: (any Sendable)?, sequence: UInt64)
}

/// Answers one request, exactly once, from any thread.
///
/// The first call to `respond(_:)` or `forward(_:)` wins; later calls are ignored and return false.
/// If the responder is released without an answer the client gets 500 `handler_did_not_respond`
/// (a handler bug must not hang the connection). When the client has gone away meanwhile, the answer
/// is dropped silently.
public final class HTTPResponder: Sendable {
    enum Answer: Sendable {
        case response(HTTPResponse)
        case forward(HTTPForward)
        case error(HTTPError)
    }

    private let sink: any HTTPResponseSink
    private let sequence: UInt64
    private let answered = Atomic<Bool>(false)

    init(sink: any HTTPResponseSink, sequence: UInt64) {
        self.sink = sink
        self.sequence = sequence
    }

    /// Sends a complete response (see `HTTPResponse` for how it is framed).
    /// - Returns: false when this responder had already answered.
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool {
        answer(.response(response), annotation: nil)
    }

    /// `respond(_:)` with an opaque value the handler gets back in `HTTPAccessRecord.annotation`
    /// (e.g. the route and verdict for its access log).
    @discardableResult
    public func respond(_ response: HTTPResponse, annotation: some Sendable) -> Bool {
        answer(.response(response), annotation: annotation)
    }

    /// Sends the request upstream and streams the upstream response back (see `HTTPForward`).
    /// - Returns: false when this responder had already answered.
    @discardableResult
    public func forward(_ forward: HTTPForward) -> Bool {
        answer(.forward(forward), annotation: nil)
    }

    /// `forward(_:)` with an opaque value the handler gets back in `HTTPAccessRecord.annotation`.
    @discardableResult
    public func forward(_ forward: HTTPForward, annotation: some Sendable) -> Bool {
        answer(.forward(forward), annotation: annotation)
    }

    /// Answers with the server's own error rendering for `error` (e.g. `.upstreamUnavailable`).
    /// - Returns: false when this responder had already answered.
    @discardableResult
    public func fail(_ error: HTTPError) -> Bool {
        answer(.error(error), annotation: nil)
    }

    private func answer(_ a: Answer, annotation: (any Sendable)?) -> Bool {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        sink.deliver(a, annotation: annotation, sequence: sequence)
        return true
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            sink.deliver(.error(.handlerDidNotRespond), annotation: nil, sequence: sequence)
        }
    }
}
