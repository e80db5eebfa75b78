import GatewayRules

/// An address the gateway listens on (`listen`, `admin`): an IP literal and port, or a Unix socket.
///
/// Written `127.0.0.1:8080`, `0.0.0.0:8080`, `[::1]:8080`, `[::]:8080` or `unix:/run/gw.sock`
/// (`unix:` followed by a path; a relative path resolves against the configuration file's folder).
/// Host names are refused: a listener binds an address, and resolving a name at startup would make
/// the bound interface depend on DNS. Port 0 asks the kernel for a free port (useful in tests).
public enum SocketAddress: Sendable, Hashable, CustomStringConvertible {
    /// An IPv4 or IPv6 literal (canonical text, IPv6 without brackets) and a port.
    case ip(host: String, port: UInt16)
    /// An absolute filesystem path of a Unix domain socket.
    case unix(path: String)

    /// `127.0.0.1:8080`, `[::1]:8080`, `unix:/path`.
    public var description: String {
        switch self {
        case .ip(let host, let port): return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        case .unix(let path): return "unix:\(path)"
        }
    }

    /// True for `0.0.0.0` and `::` (every interface).
    public var isWildcard: Bool {
        if case .ip(let host, _) = self { return host == "0.0.0.0" || host == "::" }
        return false
    }

    /// True for 127.0.0.0/8, `::1` and Unix sockets (not reachable from other machines).
    public var isLocal: Bool {
        switch self {
        case .ip(let host, _): return host == "::1" || host.hasPrefix("127.")
        case .unix: return true
        }
    }

    /// Whether two listeners would fight over the same socket: same Unix path, or the same non-zero
    /// port in the same address family on the same host or on that family's wildcard. IPv6
    /// listeners are IPv6-only (`IPV6_V6ONLY`, as nginx's `listen [::]:80` and Envoy's default), so
    /// `0.0.0.0:8080` and `[::]:8080` go together: both families on one port.
    public func conflicts(with other: SocketAddress) -> Bool {
        switch (self, other) {
        case (.unix(let a), .unix(let b)): return a == b
        case (.ip(let h1, let p1), .ip(let h2, let p2)):
            return p1 == p2 && p1 != 0 && h1.contains(":") == h2.contains(":") && (h1 == h2 || isWildcard || other.isWildcard)
        default: return false
        }
    }

    /// Reads a listener address; `baseDirectory` resolves relative Unix socket paths.
    static func parse(_ text: String, baseDirectory: String) -> Result<SocketAddress, ConfigSyntaxError> {
        let example = "127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080 or unix:/path/to.sock"
        if text.hasPrefix("unix:") {
            var path = String(text.dropFirst(5))
            if path.hasPrefix("//") { path = String(path.dropFirst(2)) }  // unix:///abs
            guard !path.isEmpty else { return .failure(ConfigSyntaxError("expected unix:/path/to.sock, got \(ConfigText.quoted(text))")) }
            let resolved = NetworkSyntax.resolvePath(path, baseDirectory: baseDirectory)
            if resolved.utf8.count > NetworkSyntax.maximumUnixPathBytes {
                return .failure(ConfigSyntaxError("the Unix socket path \(ConfigText.quoted(resolved)) is longer than \(NetworkSyntax.maximumUnixPathBytes) bytes"))
            }
            return .success(.unix(path: resolved))
        }
        if text.contains("://") {
            return .failure(ConfigSyntaxError("expected an address like \(example), not a URL: \(ConfigText.quoted(text))"))
        }
        if NetworkSyntax.port(Substring(text)) != nil {
            return .failure(ConfigSyntaxError("\(ConfigText.quoted(text)) has no host: write 127.0.0.1:\(text) (this machine only) or 0.0.0.0:\(text) (every interface)"))
        }
        guard let (hostText, portText, bracketed) = NetworkSyntax.splitHostPort(Substring(text)) else {
            if text.filter({ $0 == ":" }).count > 1, let lastColon = text.lastIndex(of: ":") {
                return .failure(ConfigSyntaxError("IPv6 addresses need brackets: [\(text[..<lastColon])]:port, got \(ConfigText.quoted(text))"))
            }
            return .failure(ConfigSyntaxError("expected an address like \(example), got \(ConfigText.quoted(text))"))
        }
        guard let portText else {
            return .failure(ConfigSyntaxError("\(ConfigText.quoted(text)) has no port: write \(text):8080 for example"))
        }
        guard let port = NetworkSyntax.port(portText) else {
            return .failure(ConfigSyntaxError("the port in \(ConfigText.quoted(text)) must be a number from 0 to 65535"))
        }
        if hostText.isEmpty {
            return .failure(ConfigSyntaxError("\(ConfigText.quoted(text)) has no host: write 127.0.0.1\(text) (this machine only) or 0.0.0.0\(text) (every interface)"))
        }
        if bracketed {
            guard let v6 = NetworkSyntax.ipv6(String(hostText)) else {
                return .failure(ConfigSyntaxError("\(ConfigText.quoted(String(hostText))) is not an IPv6 address"))
            }
            return .success(.ip(host: v6, port: port))
        }
        if let v4 = NetworkSyntax.ipv4(String(hostText)) { return .success(.ip(host: v4, port: port)) }
        if NetworkSyntax.isHostName(String(hostText)) {
            let hint = hostText == "localhost" ? "127.0.0.1:\(port) or [::1]:\(port)" : "an IP address such as 0.0.0.0:\(port)"
            return .failure(ConfigSyntaxError("listeners take an IP address, not a host name (\(ConfigText.quoted(String(hostText)))): write \(hint)"))
        }
        return .failure(ConfigSyntaxError("\(ConfigText.quoted(String(hostText))) is not an IPv4 address (IPv6 goes in brackets: [::1]:\(port))"))
    }
}
