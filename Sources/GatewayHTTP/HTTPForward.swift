// Instruction to send a request upstream and stream the response back.

import GatewayIO

/// "Send this request to this upstream pool and stream its response back downstream."
///
/// The handler builds it from the received request, rewriting what it needs (headers, target).
/// The proxy then, on the downstream connection's loop:
/// - removes hop-by-hop fields (RFC 9110 section 7.6.1): `Connection` and every field it names
///   (in the original request and in `headers`), `Keep-Alive`, `Proxy-Connection`, `TE`, `Trailer`,
///   `Transfer-Encoding`, `Upgrade`, plus `Expect` and `Content-Length`;
/// - re-frames the body with exactly one `Content-Length` (also `Content-Length: 0` for POST, PUT and
///   PATCH without a body); adds `Host` from the upstream configuration when absent;
/// - sends it as HTTP/1.1 and relays the response (see `UpstreamPool` for failures, 502 / 504).
///
/// Trailer fields of a chunked request are given to the handler (`HTTPRequest.trailers`) but never
/// forwarded: the upstream request always carries a Content-Length body.
///
/// Upgrade requests (WebSocket, h2c) are not tunnelled: `Upgrade` is dropped and the request is
/// proxied as a plain request, so the upstream answers it normally.
public struct HTTPForward: Sendable {
    /// Where to send it.
    public var upstream: UpstreamPool
    /// Method of the upstream request.
    public var method: HTTPMethod
    /// Request-target of the upstream request (origin-form), by default the one received.
    public var target: [UInt8]
    /// Header fields to send (hop-by-hop fields are removed whatever this holds).
    public var headers: HTTPHeaders
    /// The body to send.
    public var body: [UInt8]
    /// Optional edit of the upstream response head before it is relayed (runs on the event loop; keep it short).
    public var responseHeadFilter: (@Sendable (inout HTTPResponseHead) -> Void)?

    /// Forwards `request` as received (same method, target, headers, body) to `upstream`; edit the fields after.
    public init(_ request: HTTPRequest, to upstream: UpstreamPool) {
        self.upstream = upstream
        method = request.head.method
        target = request.head.target
        headers = request.head.headers
        body = request.body
        responseHeadFilter = nil
    }

    /// A forward from parts.
    public init(upstream: UpstreamPool, method: HTTPMethod, target: [UInt8], headers: HTTPHeaders, body: [UInt8] = []) {
        self.upstream = upstream
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        responseHeadFilter = nil
    }
}
