// How a message body is delimited on the HTTP/1.1 wire (RFC 9112 section 6.3).

import GatewayIO

/// How the body of an HTTP/1 message is delimited (RFC 9112 section 6.3).
public enum HTTPBodyFraming: Sendable, Hashable {
    /// No body (no Content-Length nor Transfer-Encoding on a request; HEAD / 1xx / 204 / 304 responses).
    case none
    /// Exactly this many bytes follow (Content-Length, RFC 9110 section 8.6).
    case contentLength(Int)
    /// Chunked transfer coding (RFC 9112 section 7.1); the decoded length is unknown up front. For an
    /// HTTP/2 request: DATA frames without `content-length` (RFC 9113 section 8.1).
    case chunked
    /// Responses only: the body runs until the upstream closes the connection (RFC 9112 section 6.3 rule 8).
    case untilClose

    /// Whether body bytes may follow the head.
    public var hasBody: Bool {
        switch self {
        case .none, .contentLength(0): return false
        default: return true
        }
    }
}
