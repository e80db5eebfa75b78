// The head of a response (RFC 9112 section 4, RFC 9110 section 15).

import GatewayIO

/// The head of a response: status, reason phrase, version, header fields and derived framing.
public struct HTTPResponseHead: Sendable {
    /// Status code, 100...999 as received (RFC 9110 section 15).
    public var status: Int
    /// Reason phrase bytes as received (may be empty; RFC 9112 section 4).
    public var reason: [UInt8]
    /// Protocol version of the response.
    public var version: HTTPVersion
    /// Header fields in received order and case.
    public var headers: HTTPHeaders
    /// How the body is delimited (RFC 9112 section 6.3).
    public var framing: HTTPBodyFraming
    /// Whether the connection may carry another request after this response (RFC 9112 section 9.3).
    public var keepAlive: Bool

    /// A head from parts.
    public init(status: Int, reason: [UInt8] = [], version: HTTPVersion = .http1_1,
                headers: HTTPHeaders = HTTPHeaders(), framing: HTTPBodyFraming = .none, keepAlive: Bool = true) {
        self.status = status
        self.reason = reason
        self.version = version
        self.headers = headers
        self.framing = framing
        self.keepAlive = keepAlive
    }
}
