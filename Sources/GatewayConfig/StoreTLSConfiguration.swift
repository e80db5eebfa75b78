/// TLS towards Redis (`store.tls`, for `rediss://` and `rediss+cluster://` URLs; DESIGN.md section 11).
///
/// YAML: `{ca, certificate, key, verify}`. `ca`: a PEM file of CA certificates the Redis server
/// certificates are verified against (default: the system store). `certificate` and `key`: a PEM
/// client certificate chain (leaf first) and its unencrypted private key (P-256 or RSA >= 2048),
/// sent for mutual TLS (Redis' `tls-auth-clients yes`); both or neither. `verify` (default true):
/// false accepts any server certificate, with a loud check-config and startup warning. Relative paths
/// resolve against the configuration file's folder; the files are checked by `check-config` and at
/// start, not by this layer.
public struct StoreTLSConfiguration: Sendable, Hashable {
    /// Absolute path of the CA bundle; nil uses the system store.
    public var ca: String?
    /// Client certificate chain and key (mutual TLS); nil sends none.
    public var certificate: TLSCertificatePair?
    /// Whether server certificates (chain and host name) are verified.
    public var verify: Bool

    /// Creates the settings (no file access).
    public init(ca: String? = nil, certificate: TLSCertificatePair? = nil, verify: Bool = true) {
        self.ca = ca
        self.certificate = certificate
        self.verify = verify
    }
}
