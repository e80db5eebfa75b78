/// The `--gateway` URL of `attestctl simulate`: `http://host[:port][/base]` (host name, IPv4, or
/// bracketed IPv6 literal; default port 80). A base path is prepended to every request-target.
/// TLS (`https://`) is not supported by the small client: point it at a plain-HTTP listener.
struct SimulateGatewayURL {
    /// Host name or address (IPv6 without brackets).
    let host: String
    /// TCP port.
    let port: UInt16
    /// Path prefix without a trailing slash ("" for none).
    let basePath: String
    /// The Host header value (`host[:port]`, IPv6 in brackets).
    let hostHeader: String

    /// Parses `text`.
    /// - Throws: `DeviceCommandError.usage` for another scheme, a bad port or a missing host.
    init(_ text: String) throws {
        guard text.lowercased().hasPrefix("http://") else {
            throw DeviceCommandError.usage("--gateway must be an http:// URL (TLS is not supported by attestctl simulate), got \(text)")
        }
        let rest = text.dropFirst("http://".count)
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        var path = String(rest.dropFirst(authority.count))
        guard !path.contains("?"), !path.contains("#") else { throw DeviceCommandError.usage("--gateway must not carry a query or fragment") }
        while path.hasSuffix("/") { path.removeLast() }
        var host: Substring
        var portText: Substring? = nil
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw DeviceCommandError.usage("bad IPv6 literal in --gateway") }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw DeviceCommandError.usage("bad --gateway authority \(authority)") }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty, !host.contains("@") else { throw DeviceCommandError.usage("--gateway needs a host (no user info)") }
        var port: UInt16 = 80
        if let portText {
            guard let value = UInt16(portText), value > 0 else { throw DeviceCommandError.usage("bad port in --gateway: \(portText)") }
            port = value
        }
        self.host = String(host)
        self.port = port
        self.basePath = path
        let shownHost = self.host.contains(":") ? "[\(self.host)]" : self.host
        self.hostHeader = port == 80 ? shownHost : "\(shownHost):\(port)"
    }
}
