import GatewayRules

/// `store.tls`: TLS settings of a `rediss://` / `rediss+cluster://` store.
extension ConfigValidator {
    /// The store's TLS settings: `.some(nil)` when `tls` is absent, the settings when valid, `nil`
    /// when something is wrong (reported). `tls` on a store that is not `rediss://` is an error. The
    /// files are recorded in `tlsFiles` (not opened).
    func storeTLS(_ f: Fields, kind: StoreConfiguration.Kind?) -> StoreTLSConfiguration?? {
        let path = f.path.key("tls")
        guard let node = f.node("tls") else { return .some(nil) }
        var ok = true
        if let kind {
            var isTLS = false
            if case .redis(let url) = kind { isTLS = url.tls }
            if !isTLS {
                error(path, "tls applies to rediss:// and rediss+cluster:// stores only (write rediss:// to connect to Redis with TLS)", f.mark("tls"))
                ok = false
            }
        }
        guard let t = fields(node, path, .storeTLS, what: "a mapping {ca, certificate, key, verify}") else { return nil }
        var ca: String?
        if let caNode = t.node("ca") {
            ca = filePath(caNode, path.key("ca"), expected: "a PEM file of CA certificates")
            if ca == nil { ok = false }
        }
        var certificate: String?
        if let n = t.node("certificate") {
            certificate = filePath(n, path.key("certificate"), expected: "a PEM client certificate chain")
            if certificate == nil { ok = false }
        }
        var key: String?
        if let n = t.node("key") {
            key = filePath(n, path.key("key"), expected: "a PEM private key")
            if key == nil { ok = false }
        }
        if t.has("certificate") != t.has("key") {
            let missing = t.has("certificate") ? "key" : "certificate"
            error(path.key(missing), "a client certificate needs both certificate and key (mutual TLS)", t.mark)
            ok = false
        }
        let verify = optional(t, "verify", default: true) { boolean($0, $1) }
        guard ok, let verify else { return nil }
        if !verify {
            warn(path.key("verify"), "TLS VERIFICATION OFF: any certificate is accepted from Redis, so anyone on the network path can impersonate the store and read or change keys and counters (replays would pass); set ca to the Redis CA instead", t.mark("verify"))
            if t.has("ca") { warn(path.key("ca"), "has no effect with verify: false", t.mark("ca")) }
        }
        if let ca {
            tlsFiles.append(TLSFileReference(path: path.key("ca").description, mark: t.mark("ca"), files: .certificateAuthorities(ca)))
        }
        var pair: TLSCertificatePair?
        if let certificate, let key {
            pair = TLSCertificatePair(chain: certificate, key: key)
            tlsFiles.append(TLSFileReference(path: path.key("certificate").description, mark: t.mark("certificate"),
                                             files: .clientCertificate(TLSCertificatePair(chain: certificate, key: key))))
        }
        return StoreTLSConfiguration(ca: ca, certificate: pair, verify: verify)
    }
}
