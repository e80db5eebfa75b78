import GatewayRules

/// `upstreams.NAME.tls`: TLS settings of `https://` upstreams.
extension ConfigValidator {
    /// The TLS settings of a mapping-form upstream: the settings for an `https://` endpoint (the
    /// defaults when `tls` is absent), `.some(nil)` for any other endpoint, `nil` when something is
    /// wrong (reported). With an invalid URL (`endpoint` nil) a written `tls` is still checked, so its
    /// own problems are reported too. A `ca` file is recorded in `tlsFiles` (not opened).
    func upstreamTLS(_ f: Fields, endpoint: UpstreamEndpoint?) -> UpstreamTLSConfiguration?? {
        let path = f.path.key("tls")
        guard let endpoint else {
            if f.has("tls") { _ = upstreamTLS(f, endpoint: .https(host: "", port: 443)) }
            return nil
        }
        guard case .https(let host, _) = endpoint else {
            if f.has("tls") {
                error(path, "tls applies to https:// upstreams only, and this one is \(endpoint) (write https:// to connect with TLS)", f.mark("tls"))
                return nil
            }
            return .some(nil)
        }
        guard let node = f.node("tls") else { return UpstreamTLSConfiguration(serverName: host) }
        guard let t = fields(node, path, .upstreamTLS, what: "a mapping {ca, server_name, verify}") else { return nil }
        var ca: String?? = .some(nil)
        if let caNode = t.node("ca") {
            ca = filePath(caNode, path.key("ca"), expected: "a PEM file of CA certificates").map { .some($0) }
        }
        let serverName = optional(t, "server_name", default: host) { self.serverName($0, $1) }
        let verify = optional(t, "verify", default: true) { boolean($0, $1) }
        guard let ca, let serverName, let verify else { return nil }
        if !verify {
            warn(path.key("verify"), "TLS VERIFICATION OFF: any certificate is accepted from \(endpoint), so anyone on the network path can impersonate the upstream and read or change what the gateway forwards, verdict headers included; set ca to the upstream's CA instead", t.mark("verify"))
            if t.has("ca") {
                warn(path.key("ca"), "has no effect with verify: false", t.mark("ca"))
            }
        }
        if let ca {
            tlsFiles.append(TLSFileReference(path: path.key("ca").description, mark: t.mark("ca"), files: .certificateAuthorities(ca)))
        }
        return UpstreamTLSConfiguration(ca: ca, serverName: serverName, verify: verify, serverNameIsExplicit: t.has("server_name"))
    }

    /// `server_name`: one DNS name (lower-cased) or an IP literal (canonical, IPv6 without brackets).
    private func serverName(_ node: YAMLNode, _ path: ConfigPath) -> String? {
        guard let text = string(node, path, expected: "a host name like api.internal") else { return nil }
        var host = text
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if let v4 = NetworkSyntax.ipv4(host) { return v4 }
        if let v6 = NetworkSyntax.ipv6(host) { return v6 }
        if NetworkSyntax.isHostName(host) { return host.lowercased() }
        if host.contains("*") {
            error(path, "expected one host name, not a pattern: \(ConfigText.quoted(text))", node.mark)
        } else if host.contains("://") || host.contains(":") || host.contains("/") {
            error(path, "expected a host name alone (no scheme, port or path), got \(ConfigText.quoted(text))", node.mark)
        } else {
            error(path, "\(ConfigText.quoted(text)) is not a host name or IP address", node.mark)
        }
        return nil
    }
}
