// Where a server listens.

/// An address a server listens on.
public enum HTTPListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// TCP on `host` (numeric IPv4 such as `0.0.0.0` / `127.0.0.1`, numeric IPv6 such as `::` / `::1`,
    /// or a name resolved once at start) and `port` (0 = any free port; read it from
    /// `HTTPServer.boundListeners` after `start()`). IPv6 listeners are IPv6-only (`IPV6_V6ONLY`).
    case tcp(host: String, port: UInt16)
    /// A Unix domain stream socket at `path` (a stale socket file is replaced; any other file is an error).
    case unix(path: String)

    /// `host:port` or `unix:path`.
    public var description: String {
        switch self {
        case .tcp(let host, let port): return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): return "unix:\(path)"
        }
    }
}

/// A listener after binding: what was asked and what the kernel gave.
public struct HTTPBoundListener: Sendable {
    /// The configured address.
    public let requested: HTTPListenAddress
    /// The bound address as text: `127.0.0.1:54321`, `[::1]:54321` or `unix:/path`.
    public let address: String
    /// The bound TCP port (the real one when 0 was asked), nil for Unix sockets.
    public let port: UInt16?
}
