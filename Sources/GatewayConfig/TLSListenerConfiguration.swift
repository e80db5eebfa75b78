/// TLS on a listener (`listen[N].tls`): the certificates it presents and the lowest protocol version
/// it accepts. ALPN offers `h2` and `http/1.1`.
///
/// YAML:
///
///     tls:
///       certificates:              # at least one; chosen by SNI, the first is the default
///         - {chain: tls/api.pem, key: tls/api.key}
///       min_version: "1.2"         # "1.2" (default) or "1.3"

import GatewayRules
public struct TLSListenerConfiguration: Sendable, Hashable {
    /// The certificates, in the order written (`certificates`; 1 to 64, no chain file listed twice).
    /// The handshake picks the one whose leaf matches the client's SNI name; the first one answers
    /// clients that send no SNI or a name no certificate matches.
    public var certificates: [TLSCertificatePair]
    /// Lowest accepted protocol version (`min_version`; default `.tls12`).
    public var minVersion: TLSVersion

    /// Default `min_version`.
    public static let defaultMinVersion: TLSVersion = .tls12
    /// Most certificates one listener may list.
    public static let maximumCertificates = 64

    /// Creates a TLS listener configuration. No validation here: `certificates` should not be empty
    /// (configurations from files always have at least one).
    public init(certificates: [TLSCertificatePair], minVersion: TLSVersion = defaultMinVersion) {
        self.certificates = certificates
        self.minVersion = minVersion
    }

    /// The certificate presented when SNI selects none (the first one), or nil when there is none.
    public var defaultCertificate: TLSCertificatePair? { certificates.first }
}
