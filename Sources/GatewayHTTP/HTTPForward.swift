// Instruction to send a request upstream and stream the response back.

import GatewayIO

/// "Send this request to this upstream pool and stream its response back downstream."
///
/// The handler builds it from the received request, rewriting what it needs (headers, target).
/// Hop-by-hop fields (RFC 9110 section 7.6.1) go in two steps:
/// - when the forward is made (either initializer), every field named by an option of the
///   `Connection` fields in the given headers is removed from them: the previous hop's connection
///   options apply to what that hop sent, so whatever the handler adds afterwards reaches the
///   upstream even when the client named it in `Connection`;
/// - when the request is written, the fixed list `HopByHop.fieldNames` (`Connection`, `Keep-Alive`,
///   `Proxy-Connection`, `TE`, `Transfer-Encoding`, `Upgrade`, `HTTP2-Settings`, `Trailer`,
///   `Proxy-Authenticate`, `Proxy-Authorization`, `Content-Length`, `Expect`) is dropped whatever
///   `headers` holds.
///
/// The proxy then, on the downstream connection's loop:
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
    /// Header fields to send: those given at initialization minus the ones their `Connection` fields
    /// named, plus whatever the handler sets; `HopByHop.fieldNames` are never sent, whatever this holds.
    public var headers: HTTPHeaders
    /// The body to send.
    public var body: [UInt8]
    /// Optional edit of the upstream response head before it is relayed (runs on the event loop; keep it short).
    public var responseHeadFilter: (@Sendable (inout HTTPResponseHead) -> Void)?
    /// One field set by replacement on the relayed upstream response head (after
    /// `responseHeadFilter`), e.g. a request id echoed to the client: the upstream's fields of that
    /// name are left out and this one is written last (over HTTP/2 "never indexed", RFC 7541
    /// section 6.2.3). A field whose name or value is not valid is left out, and the upstream's
    /// fields then pass as they are. Written while the head is serialized: nothing is copied or
    /// allocated for it.
    public var responseField: (name: String, value: String)?

    /// Answers an upstream failure (502 / 504) that happens before the response head, instead of the
    /// handler's `errorResponse(for:head:)`: called on the event loop with the error and a completion
    /// that takes the response (from any thread, at any later time, exactly once; never calling it
    /// answers 500 `handler_did_not_respond`). The access record keeps the upstream error. nil: the
    /// error renderer answers.
    public var upstreamFailureAnswer: UpstreamFailureAnswer?

    /// Connect timeout in seconds for this request's upstream connections (nil: the upstream's
    /// `UpstreamConfiguration.connectTimeout`); a pooled connection is reused whatever it took.
    public var connectTimeout: Double?
    /// Response timeout in seconds for this request (nil: the upstream's
    /// `UpstreamConfiguration.responseTimeout`): 504 `upstream_timeout` past it.
    public var responseTimeout: Double?

    /// See `upstreamFailureAnswer`.
    public typealias UpstreamFailureAnswer = @Sendable (HTTPError, @escaping @Sendable (HTTPResponse) -> Void) -> Void

    /// Forwards `request` as received (same method, target, headers, body) to `upstream`; edit the
    /// fields after. The fields named by the request's `Connection` options are removed now.
    public init(_ request: HTTPRequest, to upstream: UpstreamPool) {
        self.init(upstream: upstream, method: request.head.method, target: request.head.target,
                  headers: request.head.headers, body: request.body)
    }

    /// A forward from parts. `headers` are taken as what the previous hop sent: the fields named by
    /// their `Connection` options are removed now (RFC 9110 section 7.6.1), before the handler adds
    /// anything.
    public init(upstream: UpstreamPool, method: HTTPMethod, target: [UInt8], headers: consuming HTTPHeaders, body: [UInt8] = []) {
        self.upstream = upstream
        self.method = method
        self.target = target
        HopByHop.removeConnectionOptions(&headers)  // in place: the fields are taken, not copied
        self.headers = headers
        self.body = body
        responseHeadFilter = nil
        responseField = nil
        upstreamFailureAnswer = nil
        connectTimeout = nil
        responseTimeout = nil
    }

    /// A forward complete at once, for a handler that finished its edits of the fields before making
    /// it: `headers` must already be without the fields their `Connection` options named
    /// (`HopByHop.removeConnectionOptions(_:)` first, then the handler's additions). Made in the call
    /// to `HTTPResponder.forward` (a temporary), it costs one whole copy fewer than a local forward
    /// edited after its initialization (Swift 6.3 does not move a local that an `inout` call
    /// mutated, nor accept `consume` on it).
    @inlinable
    package init(upstream: UpstreamPool, method: HTTPMethod, target: [UInt8], optionsRemoved headers: consuming HTTPHeaders,
                 body: [UInt8], responseHeadFilter: (@Sendable (inout HTTPResponseHead) -> Void)?,
                 responseField: (name: String, value: String)?, upstreamFailureAnswer: UpstreamFailureAnswer? = nil,
                 connectTimeout: Double?, responseTimeout: Double?) {
        self.upstream = upstream
        self.method = method
        self.target = target
        self.headers = headers
        self.body = body
        self.responseHeadFilter = responseHeadFilter
        self.responseField = responseField
        self.upstreamFailureAnswer = upstreamFailureAnswer
        self.connectTimeout = connectTimeout
        self.responseTimeout = responseTimeout
    }
}
