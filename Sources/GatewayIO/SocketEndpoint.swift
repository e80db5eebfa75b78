// A TCP or Unix-socket address: where a listener binds or where an upstream is reached.

/// A stream socket address, used by listeners (`HTTPServerConfiguration.listeners`) and upstreams
/// (`UpstreamConfiguration.address`).
public enum SocketEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// TCP on `host` (numeric IPv4 such as `0.0.0.0` / `127.0.0.1`, numeric IPv6 such as `::` / `::1`,
    /// or a name: resolved once when a listener starts (first address used); an upstream pool
    /// resolves it at creation and again in the background, using every address) and `port`. A listener may ask for port 0 (any free port; read it from
    /// `HTTPServer.boundListeners` after `start()`); IPv6 listeners are IPv6-only (`IPV6_V6ONLY`).
    case tcp(host: String, port: UInt16)
    /// A Unix domain stream socket at `path`. A listener replaces a stale socket file there (any other
    /// file is an error).
    case unix(path: String)

    /// `host:port`, `[v6-host]:port` or `unix:path`.
    public var description: String {
        switch self {
        case .tcp(let host, let port): return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): return "unix:\(path)"
        }
    }
}
