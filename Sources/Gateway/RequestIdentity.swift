import GatewayConfig
import GatewayHTTP

/// What names a request across hops, taken from its head once (`GatewayHandler.headDecision`) and
/// written to its access-log line:
///
/// - `requestID`: the client's `X-Request-Id` when the TCP peer is in `trusted_proxies` and sent
///   exactly one plausible value (1 to 128 bytes of `[A-Za-z0-9._:/+=@-]`), else one the gateway
///   mints (`RequestIDGenerator`). Forwarded upstream as `X-Request-Id` (replacing any client copy)
///   and returned on the response.
/// - `traceID`: the trace id of a valid W3C `traceparent` (passed through untouched); a present but
///   invalid one (or several) is dropped with its `tracestate` (`traceparentInvalid`).
/// - `userAgent`: the first `User-Agent`, at most `userAgentLimit` bytes (cut on a UTF-8 boundary).
///
/// `traceID` and `userAgent` are kept only for an access-log line (`logged`), in small arrays of
/// their own: a slice would keep the head's field storage shared, and the forward made from those
/// fields would then copy all of them to add its own.
struct RequestIdentity: Sendable {
    /// The request id.
    var requestID: String
    /// Lower-case hex trace id of a valid `traceparent`.
    var traceID: [UInt8]?
    /// A `traceparent` was sent but is not valid (or was sent more than once): drop it upstream.
    var traceparentInvalid: Bool
    /// The client's `User-Agent`, bounded.
    var userAgent: [UInt8]?
    /// The client a trusted proxy named (`ForwardingHeaders.clientAddress`: the rightmost untrusted
    /// `X-Forwarded-For` hop) when the TCP peer is one of `trusted_proxies` and the line is logged;
    /// nil otherwise (the peer is the client). The access log's `client`, the peer going to `peer`,
    /// as nginx's realip module and Envoy's trusted hops do.
    var forwardedClient: String?

    /// Longest user agent logged, bytes.
    static let userAgentLimit = 256
    /// Longest request id taken from a trusted proxy, bytes.
    static let requestIDLimit = 128
    /// The field carrying the request id, both ways.
    static let requestIDField = "X-Request-Id"

    /// The identity of a request whose head was just decided (counted as begun by `ids`); `logged`:
    /// its access-log line will be written (`log.access`), so `traceID`, `userAgent` and
    /// `forwardedClient` are kept.
    init(head: borrowing HTTPRequestHead, connection: HTTPConnectionInfo, forwarding: ForwardingHeaders, ids: RequestIDGenerator,
         logged: Bool) {
        let headers = head.headers
        let material = ids.begin(loop: connection.loopIndex)
        let trusted = forwarding.trusted
        let peerIsTrusted = !trusted.isEmpty && trusted.contains(host: connection.remoteHost)
        if peerIsTrusted, headers.count(of: RequestIdentity.requestIDField) == 1,
           let sent = headers.firstBytes(RequestIdentity.requestIDField), RequestIdentity.isPlausibleID(sent) {
            requestID = String(decoding: sent, as: UTF8.self)
        } else {
            requestID = RequestIDGenerator.id(material)
        }
        forwardedClient = peerIsTrusted && logged ? forwarding.clientAddress(headers: headers, connection: connection) : nil
        traceID = nil
        traceparentInvalid = false
        if let traceparent = headers.firstBytes("traceparent") {
            if headers.count(of: "traceparent") == 1, let trace = TraceParent.traceID(traceparent) {
                if logged { traceID = Array(trace) }
            } else {
                traceparentInvalid = true
            }
        }
        userAgent = logged ? headers.firstBytes("User-Agent").map { Array(RequestIdentity.bounded($0)) } : nil
    }

    /// A request id as a trusted proxy may set it.
    static func isPlausibleID(_ bytes: ArraySlice<UInt8>) -> Bool {
        !bytes.isEmpty && bytes.count <= requestIDLimit && bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == 0x2E || b == 0x5F || b == 0x3A || b == 0x2F || b == 0x2B || b == 0x3D || b == 0x40 || b == 0x2D
        }
    }

    /// `bytes` cut to `userAgentLimit` without splitting a UTF-8 sequence.
    static func bounded(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard bytes.count > userAgentLimit else { return bytes }
        var end = bytes.startIndex + userAgentLimit
        while end > bytes.startIndex && bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return bytes[bytes.startIndex..<end]
    }

    /// Sets the request id on the forwarded fields and drops an invalid `traceparent` with its
    /// `tracestate`.
    func apply(to headers: inout HTTPHeaders) {
        // The id is the gateway's own hex or a trusted proxy's id checked by `isPlausibleID`:
        // nothing to validate again.
        headers.remove(RequestIdentity.requestIDField)
        headers.appendTrusted(name: "X-Request-Id", value: requestID)
        if traceparentInvalid {
            headers.remove("traceparent")
            headers.remove("tracestate")
        }
    }

    /// `response` with the request id set.
    func echo(on response: HTTPResponse) -> HTTPResponse {
        var response = response
        try? response.headers.replaceOrAdd(name: RequestIdentity.requestIDField, value: requestID)
        return response
    }
}
