// The interface between the proxy core and whatever decides what to do with requests.

import GatewayIO

/// Decides what happens to requests. Protocol-agnostic: HTTP/1.1 connections and HTTP/2 streams
/// (RFC 9113) call it the same way.
///
/// Per request, in order:
/// 1. `headDecision(for:connection:)` on the connection's event loop once the head is parsed and valid:
///    accept with a body limit, or answer at once; either way with the request's `RequestContext`
///    (what the handler learnt from the head, e.g. the route it matched).
/// 2. `handle(_:context:responder:)` on the event loop once the whole request (head, decoded body,
///    trailers) is in, with the context of step 1 (not called when step 1 answered). Answer through
///    the responder, from any thread, at any later time, exactly once; the answer may replace the
///    context (`HTTPResponder.respond(_:context:)`, `forward(_:context:)`).
/// 3. `requestCompleted(_:context:)` on the event loop when the response is handed to the connection
///    (or the exchange was aborted), with the context as the last answer left it; nil only when no
///    head was decided (e.g. an unparsable request line, a head over the limits).
///
/// `errorResponse(for:head:)` renders the answers the server generates itself (malformed requests,
/// limits, timeouts, upstream failures); they leave the context as it was. Calls 1, 3 and the error
/// renderer run on an event loop: they must not block.
///
/// The context reaches the handler typed (no cast in the handler): the connections carry it boxed,
/// and only code compiled for the handler's type boxes and unboxes it (`HTTPHandlerCalls`,
/// `HTTPResponder`). A handler without per-request state uses `Void`.
public protocol HTTPHandler: AnyObject, Sendable {
    /// What the handler keeps of one request from its head decision to `requestCompleted`.
    associatedtype RequestContext: Sendable

    /// Head decision: `.accept(bodyLimit:context:)` to read the body, `.respond(_:context:)` to answer
    /// now (`.accept(bodyLimit:)` and `.respond(_:)` when the context is `Void`).
    func headDecision(for head: HTTPRequestHead, connection: HTTPConnectionInfo) -> HTTPHeadDecision<RequestContext>

    /// The whole request is in, `context` as the head decision gave it: answer with
    /// `responder.respond(_:)`, `responder.forward(_:)` or `responder.fail(_:)` (each optionally with
    /// an updated context).
    ///
    /// The request is the handler's own (`consuming`): the connection keeps no reference to its
    /// fields, target or body buffers, so a forward made from them edits them in place instead of
    /// copying them (one copy of the field list per request, and its regrowth, saved).
    func handle(_ request: consuming HTTPRequest, context: RequestContext, responder: HTTPResponder<RequestContext>)

    /// The response for an error the server detected. `head` is nil when the request line itself
    /// was unusable; once the request was handed to `handle` its fields are empty (they went with
    /// the request), its method, target and version remain. The status should be `error.status`.
    /// Default: `text/plain` body `<code>\n`.
    func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse

    /// The same rendering with the request's context when its head was decided (e.g. to echo a
    /// request id the head decision chose), nil otherwise. Default: `errorResponse(for:head:)`.
    func errorResponse(for error: HTTPError, head: HTTPRequestHead?, context: RequestContext?) -> HTTPResponse

    /// Access-log hook: final status, bytes and latency of a request, with its context as the head
    /// decision or the last answer left it (nil when no head was decided). Default: nothing.
    func requestCompleted(_ record: HTTPAccessRecord, context: RequestContext?)

    /// A downstream TLS handshake finished, well or not (runs on the event loop: must not block).
    /// Default: nothing.
    func tlsHandshakeFinished(_ report: TLSHandshakeReport)

    /// A downstream connection started speaking its protocol (`connection.protocolName`: `h1` once
    /// the first bytes are not the HTTP/2 preface or TLS ALPN chose HTTP/1.1, `h2` after the preface
    /// or ALPN `h2`); reported once per connection, on its event loop. A connection that never got
    /// that far (closed during the TLS handshake or before its first bytes) is never reported.
    /// Default: nothing.
    func connectionStarted(_ connection: HTTPConnectionInfo)

    /// A connection reported by `connectionStarted` closed (same `connection` value), on its event
    /// loop. Default: nothing.
    func connectionEnded(_ connection: HTTPConnectionInfo)
}

extension HTTPHandler {
    /// Plain-text error body: `<code>\n`, `Content-Type: text/plain; charset=utf-8`.
    public func errorResponse(for error: HTTPError, head: HTTPRequestHead?) -> HTTPResponse {
        var headers = HTTPHeaders()
        try? headers.add(name: "Content-Type", value: "text/plain; charset=utf-8")
        return HTTPResponse(status: error.status, headers: headers, body: Array((error.code + "\n").utf8))
    }

    /// `errorResponse(for:head:)`, ignoring the context.
    public func errorResponse(for error: HTTPError, head: HTTPRequestHead?, context: RequestContext?) -> HTTPResponse {
        errorResponse(for: error, head: head)
    }

    /// Does nothing.
    public func connectionStarted(_ connection: HTTPConnectionInfo) {}

    /// Does nothing.
    public func connectionEnded(_ connection: HTTPConnectionInfo) {}

    /// Does nothing.
    public func requestCompleted(_ record: HTTPAccessRecord, context: RequestContext?) {}

    /// Does nothing.
    public func tlsHandshakeFinished(_ report: TLSHandshakeReport) {}
}
