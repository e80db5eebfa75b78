/// One certificate a TLS listener can present (`listen[N].tls.certificates[M]`): a PEM chain and
/// its private key, as absolute file paths.
///
/// YAML: `{chain: tls/api.pem, key: tls/api.key}`; relative paths resolve against the configuration
/// file's folder. The configuration layer does not open these files: whether they exist, parse, and
/// belong together is checked by the caller (see `TLSFileReference`, `LoadedConfiguration.tlsFiles`).
public struct TLSCertificatePair: Sendable, Hashable {
    /// Absolute path of the PEM certificate chain: the leaf certificate first, then its intermediates
    /// (`chain`). The leaf's names are what SNI selects on.
    public var chain: String
    /// Absolute path of the PEM private key of the leaf certificate (`key`; P-256 or RSA). May be the
    /// same file as `chain` when one PEM file holds both.
    public var key: String

    /// Creates a pair from two absolute paths (no validation, no file access).
    public init(chain: String, key: String) {
        self.chain = chain
        self.key = key
    }
}
