// One line of access log: what happened to a request.

import GatewayIO

/// What happened to one request, reported to `HTTPHandler.requestCompleted(_:context:)` (beside the
/// handler's own per-request context) when its response is fully handed to the connection (or the
/// exchange was aborted).
public struct HTTPAccessRecord: Sendable {
    /// The downstream connection (its `protocolName`, `"h1"` or `"h2"`, is the protocol the request
    /// arrived over; its `tlsVersion` the TLS version, nil on plain connections).
    public var connection: HTTPConnectionInfo
    /// Method, or nil when the request line could not be parsed.
    public var method: HTTPMethod?
    /// Raw request-target, or nil when the request line could not be parsed.
    public var target: [UInt8]?
    /// Final status sent downstream; 499 when the client went away (or reset the HTTP/2 stream) before
    /// any response byte. An HTTP/2 stream reset by the server as malformed (RST_STREAM
    /// `PROTOCOL_ERROR`, RFC 9113 section 8.1.1: no response is sent) reports 400 with `error`.
    public var status: Int
    /// The error the server answered by itself (400, 408, 413, 431, 502, 504...), if any.
    public var error: HTTPError?
    /// Decoded request body bytes received.
    public var requestBodyBytes: Int
    /// Response body bytes sent downstream (after framing was removed).
    public var responseBodyBytes: Int
    /// Nanoseconds from the first byte of the request to the last byte of the response handed to the socket.
    public var latencyNanoseconds: UInt64
    /// Name of the upstream pool when the request was forwarded.
    public var upstream: String?
    /// Whether the exchange ended early (client gone or stream reset, upstream failed mid-response).
    public var aborted: Bool
    /// The target as a String, or nil.
    public var targetString: String? { target.map { String(decoding: $0, as: UTF8.self) } }
}
