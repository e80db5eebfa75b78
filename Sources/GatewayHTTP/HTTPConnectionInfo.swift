// What the server knows about the downstream connection a request arrived on.

/// Facts about the downstream connection of a request (for access logs, `X-Forwarded-For`, rate limits).
public struct HTTPConnectionInfo: Sendable {
    /// Unique (per process) connection number, counting from 1.
    public let id: UInt64
    /// The peer: `1.2.3.4:5678`, `[::1]:5678`, or `unix:` for a Unix socket peer.
    public let remoteAddress: String
    /// The listener it arrived on: `127.0.0.1:8080`, `[::]:8080` or `unix:/path`.
    public let localAddress: String
    /// Whether the connection is TLS (always false until TLS lands).
    public let isSecure: Bool

    /// Info from parts.
    public init(id: UInt64, remoteAddress: String, localAddress: String, isSecure: Bool = false) {
        self.id = id
        self.remoteAddress = remoteAddress
        self.localAddress = localAddress
        self.isSecure = isSecure
    }
}
