import GatewayRules

/// Where an upstream lives: a host and port spoken to in plain HTTP or over TLS, or a Unix domain
/// socket speaking HTTP/1.1.
///
/// Written `http://127.0.0.1:8081`, `http://backend.internal:8080`, `http://[::1]:8081` (port
/// defaults to 80), `https://api.internal:8443` (port defaults to 443; TLS settings in
/// `UpstreamConfiguration.tls`), or `unix:/run/app.sock` (also `unix:///run/app.sock`; a relative
/// path resolves against the configuration file's folder). Refused: user info, a path other than `/`
/// (the request-target is forwarded as received, never rewritten), query and fragment.
public enum UpstreamEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Plain HTTP over TCP. `host` is an IPv4 literal, an IPv6 literal without brackets, or a DNS name
    /// (resolved by the gateway when it connects).
    case http(host: String, port: UInt16)
    /// HTTP over TLS over TCP; same `host` forms as `http`. The TLS settings (CA, server name,
    /// verification) are the upstream's `UpstreamConfiguration.tls`.
    case https(host: String, port: UInt16)
    /// HTTP/1.1 over the Unix domain socket at this absolute path.
    case unix(path: String)

    /// `http://host:port`, `https://host:port` or `unix:/path`.
    public var description: String {
        switch self {
        case .http(let host, let port): return "http://" + Self.authority(host, port)
        case .https(let host, let port): return "https://" + Self.authority(host, port)
        case .unix(let path): return "unix:\(path)"
        }
    }

    /// Whether connections to this upstream start with a TLS handshake (`https://`).
    public var isTLS: Bool {
        if case .https = self { return true }
        return false
    }

    /// The host of an `http://` or `https://` endpoint (IPv6 without brackets); nil for `unix:`.
    public var host: String? {
        switch self {
        case .http(let host, _), .https(let host, _): return host
        case .unix: return nil
        }
    }

    private static func authority(_ host: String, _ port: UInt16) -> String {
        host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
    }

    /// Reads an upstream URL; `baseDirectory` resolves relative Unix socket paths.
    static func parse(_ text: String, baseDirectory: String) -> Result<UpstreamEndpoint, ConfigSyntaxError> {
        let expected = "expected http://host:port, https://host:port or unix:/path/to.sock, got \(ConfigText.quoted(text))"
        if text.hasPrefix("unix:") {
            switch SocketAddress.parse(text, baseDirectory: baseDirectory) {
            case .success(.unix(let path)): return .success(.unix(path: path))
            case .success: return .failure(ConfigSyntaxError(expected))
            case .failure(let e): return .failure(e)
            }
        }
        let secure = text.hasPrefix("https://")
        guard secure || text.hasPrefix("http://") else {
            if !text.contains("://"), NetworkSyntax.splitHostPort(Substring(text)) != nil, text.contains(":") {
                return .failure(ConfigSyntaxError("\(expected); did you mean http://\(text)?"))
            }
            return .failure(ConfigSyntaxError(expected))
        }
        var rest = Substring(text.dropFirst(secure ? 8 : 7))
        if rest.contains(where: { $0 == "?" || $0 == "#" }) {
            return .failure(ConfigSyntaxError("upstream URLs take no query or fragment: \(ConfigText.quoted(text))"))
        }
        var authority = rest
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            let path = rest[slash...]
            if path != "/" {
                return .failure(ConfigSyntaxError("upstream URLs take no path (\(ConfigText.quoted(String(path)))): requests are forwarded with the path they arrived with"))
            }
        }
        rest = authority
        if rest.contains("@") {
            return .failure(ConfigSyntaxError("upstream URLs take no user info (user@): \(ConfigText.quoted(text))"))
        }
        let make: (String, UInt16) -> UpstreamEndpoint = secure ? { .https(host: $0, port: $1) } : { .http(host: $0, port: $1) }
        guard let (host, portText, bracketed) = NetworkSyntax.splitHostPort(rest), !host.isEmpty else {
            return .failure(ConfigSyntaxError(expected))
        }
        var port: UInt16 = secure ? 443 : 80
        if let portText {
            guard let p = NetworkSyntax.port(portText), p != 0 else {
                return .failure(ConfigSyntaxError("the port in \(ConfigText.quoted(text)) must be a number from 1 to 65535"))
            }
            port = p
        }
        if bracketed {
            guard let v6 = NetworkSyntax.ipv6(String(host)) else {
                return .failure(ConfigSyntaxError("\(ConfigText.quoted(String(host))) is not an IPv6 address"))
            }
            return .success(make(v6, port))
        }
        if let v4 = NetworkSyntax.ipv4(String(host)) { return .success(make(v4, port)) }
        if NetworkSyntax.isHostName(String(host)) { return .success(make(host.lowercased(), port)) }
        return .failure(ConfigSyntaxError("\(ConfigText.quoted(String(host))) is not a host name or IP address"))
    }
}
