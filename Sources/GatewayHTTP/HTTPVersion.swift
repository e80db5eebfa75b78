// Protocol version of a message (RFC 9110 section 2.5).

import GatewayIO

/// The HTTP version of a message: 1.0 and 1.1 on the HTTP/1 wire (RFC 9112 section 2.3),
/// 2.0 for HTTP/2 streams (RFC 9113).
public struct HTTPVersion: Sendable, Hashable, CustomStringConvertible {
    /// Major version digit.
    public var major: Int
    /// Minor version digit.
    public var minor: Int

    /// A version from its two digits.
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }

    /// HTTP/1.0 (RFC 1945).
    public static let http1_0 = HTTPVersion(major: 1, minor: 0)
    /// HTTP/1.1 (RFC 9112).
    public static let http1_1 = HTTPVersion(major: 1, minor: 1)
    /// HTTP/2 (RFC 9113).
    public static let http2 = HTTPVersion(major: 2, minor: 0)

    /// `HTTP/<major>.<minor>`.
    public var description: String { "HTTP/\(major).\(minor)" }
}
