// What a TLS client context (for `https://` upstreams) is built from.

import GatewayRules

/// Settings of the TLS client used towards `https://` upstreams.
///
/// Peer verification is on by default (RFC 5280 path validation by OpenSSL, RFC 6125 host name
/// check via SSL_set1_host(3)). Cipher suites and groups are OpenSSL's defaults (`DEFAULT`) at the
/// system's security level (Debian 12: level 2, i.e. keys of at least 112-bit strength, no SHA-1
/// signatures), so older upstreams keep working; the listener side is the strict one.
package struct TLSClientSettings: Sendable, Hashable {
    /// Whether the upstream's certificate chain and host name are verified. `false` accepts any
    /// certificate: the caller must log a loud warning (`TLSClientContext.isVerifying`).
    package var verify: Bool
    /// PEM file of trusted CA certificates; nil uses the system store
    /// (SSL_CTX_set_default_verify_paths(3): /usr/lib/ssl/certs, /usr/lib/ssl/cert.pem on Debian).
    package var caPath: String?
    /// ALPN names offered (RFC 7301), in order; empty offers none. Default `["http/1.1"]`.
    package var alpn: [String]
    /// Lowest version offered. Default `.tls12`.
    package var minVersion: TLSVersion
    /// Highest version offered. Default `.tls13`.
    package var maxVersion: TLSVersion
    /// Whether sessions are kept per server name for resumption (one per name; a TLS 1.3 ticket is
    /// used once, RFC 8446 appendix C.4). Default on.
    package var sessionReuse: Bool
    /// Whether the client accepts session tickets (off: TLS 1.2 resumes by session ID only).
    /// Default on.
    package var sessionTickets: Bool
    /// Client certificate for mutual TLS (RFC 8446 section 4.4.2): a PEM chain file (leaf first) and
    /// its PEM private key file (P-256 or RSA >= 2048, unencrypted); both nil sends none. Default none.
    package var clientCertificate: (chainPath: String, keyPath: String)? {
        get { clientChainPath.flatMap { chain in clientKeyPath.map { (chain, $0) } } }
        set { clientChainPath = newValue?.chainPath; clientKeyPath = newValue?.keyPath }
    }
    private var clientChainPath: String?
    private var clientKeyPath: String?

    /// Settings with the defaults above.
    package init(verify: Bool = true, caPath: String? = nil, alpn: [String] = ["http/1.1"],
                 minVersion: TLSVersion = .tls12, maxVersion: TLSVersion = .tls13,
                 sessionReuse: Bool = true, sessionTickets: Bool = true) {
        self.verify = verify
        self.caPath = caPath
        self.alpn = alpn
        self.minVersion = minVersion
        self.maxVersion = maxVersion
        self.sessionReuse = sessionReuse
        self.sessionTickets = sessionTickets
    }
}
