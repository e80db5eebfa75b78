// The interface between the proxy core and whatever decides what to do with requests.

import GatewayIO

/// Decides what happens to requests. Protocol-agnostic: HTTP/1.1 connections and HTTP/2 streams
/// (RFC 9113) call it the same way.
///
/// Per request, in order:
/// 1. `headDecision(for:connection:)` on the connection's event loop once the head is parsed and valid:
///    accept with a body limit, or answer at once.
/// 2. `handle(_:responder:)` on the event loop once the whole request (head, decoded body, trailers)
///    is in. Answer through the responder, from any thread, at any later time, exactly once.
/// 3. `requestCompleted(_:)` on the event loop when the response is handed to the connection.
///
/// `errorResponse(for:head:)` renders the answers the server generates itself (malformed requests,
/// limits, timeouts, upstream failures). Calls 1, 3 and the error renderer run on an event loop:
/// they must not block.
public protocol HTTPHandler: AnyObject, Sendable {
    /// Head decision: `.accept(bodyLimit:)` to read the body, `.respond(_)` to answer now.
    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision

    /// The whole request is in: answer with `responder.respond(_:)` or `responder.forward(_:)`.
    func handle(_ request: HTTPRequest, responder: HTTPResponder)

    /// The response for an error the server detected. `head` is nil when the request line itself
    /// was unusable. The status should be `error.status`. Default: `text/plain` body `<code>\n`.
    func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse

    /// Access-log hook: final status, bytes and latency of a request. Default: nothing.
    func requestCompleted(_ record: HTTPAccessRecord)

    /// A downstream TLS handshake finished, well or not (runs on the event loop: must not block).
    /// Default: nothing.
    func tlsHandshakeFinished(_ report: TLSHandshakeReport)
}

extension HTTPHandler {
    /// Plain-text error body: `<code>\n`, `Content-Type: text/plain; charset=utf-8`.
    public func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse {
        var headers = HTTPHeaders()
        try? headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        return HTTPResponse(status: error.status, headers: headers, body: Array((error.code + "\n").utf8))
    }

    /// Does nothing.
    public func requestCompleted(_ record: HTTPAccessRecord) {}

    /// Does nothing.
    public func tlsHandshakeFinished(_ report: TLSHandshakeReport) {}
}
