import GatewayRules

/// Where an upstream lives: a plain-HTTP host and port, or a Unix domain socket speaking HTTP/1.1.
///
/// Written `http://127.0.0.1:8081`, `http://backend.internal:8080`, `http://[::1]:8081`
/// (port defaults to 80), or `unix:/run/app.sock` (also `unix:///run/app.sock`; a relative path
/// resolves against the configuration file's folder). Refused: `https://` (not supported yet),
/// user info, a path other than `/` (the request-target is forwarded as received, never rewritten),
/// query and fragment.
public enum UpstreamEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Plain HTTP over TCP. `host` is an IPv4 literal, an IPv6 literal without brackets, or a DNS name
    /// (resolved by the gateway when it connects).
    case http(host: String, port: UInt16)
    /// HTTP/1.1 over the Unix domain socket at this absolute path.
    case unix(path: String)

    /// `http://host:port` or `unix:/path`.
    public var description: String {
        switch self {
        case .http(let host, let port): return host.contains(":") ? "http://[\(host)]:\(port)" : "http://\(host):\(port)"
        case .unix(let path): return "unix:\(path)"
        }
    }

    /// Reads an upstream URL; `baseDirectory` resolves relative Unix socket paths.
    static func parse(_ text: String, baseDirectory: String) -> Result<UpstreamEndpoint, ConfigSyntaxError> {
        let expected = "expected http://host:port or unix:/path/to.sock, got \(ConfigText.quoted(text))"
        if text.hasPrefix("unix:") {
            switch SocketAddress.parse(text, baseDirectory: baseDirectory) {
            case .success(.unix(let path)): return .success(.unix(path: path))
            case .success: return .failure(ConfigSyntaxError(expected))
            case .failure(let e): return .failure(e)
            }
        }
        if text.lowercased().hasPrefix("https://") {
            return .failure(ConfigSyntaxError("https upstreams are not supported yet: use http:// on a trusted network or a Unix socket"))
        }
        guard text.hasPrefix("http://") else {
            if !text.contains("://"), NetworkSyntax.splitHostPort(Substring(text)) != nil, text.contains(":") {
                return .failure(ConfigSyntaxError("\(expected); did you mean http://\(text)?"))
            }
            return .failure(ConfigSyntaxError(expected))
        }
        var rest = Substring(text.dropFirst(7))
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
        guard let (host, portText, bracketed) = NetworkSyntax.splitHostPort(rest), !host.isEmpty else {
            return .failure(ConfigSyntaxError(expected))
        }
        var port: UInt16 = 80
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
            return .success(.http(host: v6, port: port))
        }
        if let v4 = NetworkSyntax.ipv4(String(host)) { return .success(.http(host: v4, port: port)) }
        if NetworkSyntax.isHostName(String(host)) { return .success(.http(host: host.lowercased(), port: port)) }
        return .failure(ConfigSyntaxError("\(ConfigText.quoted(String(host))) is not a host name or IP address"))
    }
}
