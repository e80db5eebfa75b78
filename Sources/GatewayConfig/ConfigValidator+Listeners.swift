import GatewayRules

/// Listeners: `listen` (plain addresses and TLS mappings), `admin`, and the file paths they name.
extension ConfigValidator {
    /// What a `listen` item may be, for "expected ..." messages.
    private static let listenerShape = "an address like 127.0.0.1:8080 or a mapping {address, tls}"

    // MARK: listen / admin

    func listeners(_ root: Fields, marks: inout Marks) -> [ListenerConfiguration]? {
        guard let node = root.node("listen") else {
            missing(root, "listen", " (e.g. listen: 127.0.0.1:8080)")
            return nil
        }
        let path = root.path.key("listen")
        var items: [(YAMLNode, ConfigPath)]
        if case .sequence(let list) = node.kind {
            if list.isEmpty { error(path, "needs at least one address", node.mark); return nil }
            if list.count > 16 { error(path, "at most 16 addresses, got \(list.count)", node.mark); return nil }
            items = list.enumerated().map { ($0.element, path.index($0.offset)) }
        } else {
            items = [(node, path)]
        }
        var result: [ListenerConfiguration] = []
        var ok = true
        for (item, itemPath) in items {
            guard let listener = listener(item, itemPath) else { ok = false; continue }
            let address = listener.address
            if let clash = result.firstIndex(where: { $0.address.conflicts(with: address) }) {
                var (clashPath, clashMark) = (itemPath, item.mark)
                if case .mapping(let entries) = item.kind, let entry = entries.first(where: { $0.key == "address" }) {
                    (clashPath, clashMark) = (itemPath.key("address"), entry.value.mark)
                }
                error(clashPath, "\(address) overlaps listen[\(clash)] (\(result[clash].address))", clashMark)
                ok = false
                continue
            }
            result.append(listener)
            marks.listen.append(item.mark)
        }
        return ok ? result : nil
    }

    /// One `listen` item: an address string (plain) or a mapping `{address, tls}`.
    private func listener(_ node: YAMLNode, _ path: ConfigPath) -> ListenerConfiguration? {
        guard case .mapping = node.kind else {
            return address(node, path, expected: Self.listenerShape).map { ListenerConfiguration(address: $0) }
        }
        guard let f = fields(node, path, .listener, what: Self.listenerShape) else { return nil }
        var address: SocketAddress?
        if let addressNode = f.node("address") {
            address = self.address(addressNode, path.key("address"))
        } else {
            missing(f, "address", " (e.g. address: 0.0.0.0:8443)")
        }
        var tls: TLSListenerConfiguration?? = .some(nil)
        if let tlsNode = f.node("tls") {
            tls = listenerTLS(tlsNode, path.key("tls")).map { .some($0) }
        }
        let proxy = optional(f, "proxy_protocol", default: false) { boolean($0, $1) }
        guard let address, let tls, let proxy else { return nil }
        return ListenerConfiguration(address: address, tls: tls, proxyProtocol: proxy)
    }

    func address(_ node: YAMLNode, _ path: ConfigPath, expected: String = "an address like 127.0.0.1:8080") -> SocketAddress? {
        guard let text = string(node, path, expected: expected) else { return nil }
        switch SocketAddress.parse(text, baseDirectory: baseDirectory) {
        case .success(let a): return a
        case .failure(let e): error(path, e.message, node.mark); return nil
        }
    }

    // MARK: listen[].tls

    private func listenerTLS(_ node: YAMLNode, _ path: ConfigPath) -> TLSListenerConfiguration? {
        guard let f = fields(node, path, .listenerTLS, what: "a mapping {certificates, min_version}") else { return nil }
        var certificates: [TLSCertificatePair]?
        if let list = f.node("certificates") {
            certificates = certificatePairs(list, path.key("certificates"))
        } else {
            missing(f, "certificates", ": list at least one {chain, key} pair of PEM files (chosen by SNI, the first is the default)")
        }
        let minVersion = optional(f, "min_version", default: TLSListenerConfiguration.defaultMinVersion) { tlsVersion($0, $1) }
        guard let certificates, let minVersion else { return nil }
        return TLSListenerConfiguration(certificates: certificates, minVersion: minVersion)
    }

    /// `certificates`: 1 to 64 `{chain, key}` mappings, no chain file twice. Each pair that validates
    /// is recorded in `tlsFiles` with its path (the files are not opened).
    private func certificatePairs(_ node: YAMLNode, _ path: ConfigPath) -> [TLSCertificatePair]? {
        guard let items = list(node, path, of: "{chain, key} pairs of PEM files") else { return nil }
        if items.isEmpty {
            error(path, "needs at least one {chain, key} pair: the first is the certificate presented when SNI selects no other", node.mark)
            return nil
        }
        let limit = TLSListenerConfiguration.maximumCertificates
        if items.count > limit {
            error(path, "at most \(limit) certificates, got \(items.count)", node.mark)
            return nil
        }
        var pairs: [TLSCertificatePair] = []
        var references: [TLSFileReference] = []
        var ok = true
        for (i, item) in items.enumerated() {
            let p = path.index(i)
            guard let f = fields(item, p, .certificate, what: "a mapping {chain, key} of PEM file paths") else { ok = false; continue }
            var chain: String?, key: String?
            if let chainNode = f.node("chain") {
                chain = filePath(chainNode, p.key("chain"), expected: "a PEM certificate chain file")
            } else {
                missing(f, "chain", " (PEM file: the certificate first, then its intermediates)")
            }
            if let keyNode = f.node("key") {
                key = filePath(keyNode, p.key("key"), expected: "a PEM private key file")
            } else {
                missing(f, "key", " (PEM file with the private key of chain)")
            }
            guard let chain, let key else { ok = false; continue }
            if let first = pairs.firstIndex(where: { $0.chain == chain }) {
                error(p.key("chain"), "\(chain) is also \(path.index(first).key("chain"))", f.mark("chain"))
                ok = false
                continue
            }
            let pair = TLSCertificatePair(chain: chain, key: key)
            pairs.append(pair)
            references.append(TLSFileReference(path: p.description, mark: item.mark, files: .certificate(pair)))
        }
        guard ok else { return nil }
        tlsFiles += references
        return pairs
    }

    /// `min_version`: `"1.2"` or `"1.3"`; lower versions and `TLSv1.2`-style spellings get their own
    /// message.
    private func tlsVersion(_ node: YAMLNode, _ path: ConfigPath) -> TLSVersion? {
        let allowed = "\"1.2\" (the default) or \"1.3\""
        guard case .scalar(let s) = node.kind, !node.isNull else {
            error(path, "expected \(allowed), got \(node.kindDescription)", node.mark)
            return nil
        }
        if let version = TLSVersion(rawValue: s.text) { return version }
        var bare = Substring(s.text.lowercased())
        for prefix in ["tlsv", "tls "] where bare.hasPrefix(prefix) { bare = bare.dropFirst(prefix.count); break }
        if bare.hasPrefix("tls") { bare = bare.dropFirst(3) }
        if let version = TLSVersion(rawValue: String(bare)) {
            error(path, "write the version number only: \"\(version.rawValue)\", got \(ConfigText.quoted(s.text))", node.mark)
        } else if ["1.0", "1.1", "1", "1.00", "1.10"].contains(bare) || s.text.lowercased().hasPrefix("ssl") {
            error(path, "\(ConfigText.quoted(s.text)) is refused: TLS 1.0 and 1.1 are deprecated (RFC 8996) and SSL is broken; write \(allowed)", node.mark)
        } else {
            error(path, "expected \(allowed), got \(ConfigText.quoted(s.text))", node.mark)
        }
        return nil
    }

    /// Warns about TLS settings that no listener uses.
    func unusedTLSSettings(_ root: Fields, listen: [ListenerConfiguration]) {
        guard !listen.contains(where: \.isTLS), let node = root.node("timeouts"), case .mapping(let entries) = node.kind,
              let entry = entries.first(where: { $0.key == "tls_handshake" }), !entry.value.isNull else { return }
        warn(.root.key("timeouts").key("tls_handshake"), "has no effect: no listener has tls", entry.value.mark)
    }

    // MARK: file paths

    /// A file path, made absolute against the configuration file's folder. The file is not opened.
    func filePath(_ node: YAMLNode, _ path: ConfigPath, expected: String) -> String? {
        guard let text = string(node, path, expected: "\(expected) path") else { return nil }
        if text.isEmpty {
            error(path, "expected \(expected) path, got an empty string", node.mark)
            return nil
        }
        if text.hasSuffix("/") {
            error(path, "expected \(expected) path, got the folder \(ConfigText.quoted(text))", node.mark)
            return nil
        }
        return NetworkSyntax.resolvePath(text, baseDirectory: baseDirectory)
    }
}
