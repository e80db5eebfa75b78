/// A file the configuration names for TLS or trust (certificates, CA bundles, private keys), with the key path and position that named it, so that a
/// checker outside `GatewayConfig` can report file problems the way configuration errors are
/// reported (`listen[1].tls.certificates[0]: ... (line 7, column 11)`).
///
/// The configuration layer resolves these paths but never opens the files: reading, parsing and
/// matching certificates and keys belongs to the TLS code. `LoadedConfiguration.tlsFiles` lists every
/// reference of a loaded configuration; `ConfigCheckReport.check(path:checkFiles:)` runs a checker
/// over them.
public struct TLSFileReference: Sendable, Hashable {
    /// What the files are for.
    public enum Files: Sendable, Hashable {
        /// A listener certificate (`listen[N].tls.certificates[M]`): PEM chain and private key.
        case certificate(TLSCertificatePair)
        /// An upstream's PEM bundle of CA certificates (`upstreams.NAME.tls.ca`).
        case certificateAuthorities(String)
        /// A client certificate for mutual TLS (`store.tls.certificate` and `store.tls.key`): PEM chain
        /// and private key, checked for loading and matching (not for server-certificate rules).
        case clientCertificate(TLSCertificatePair)
        /// A PEM P-256 private key that signs verdict tokens (`verdict_token.key_files[N]`; checked
        /// by the same file checker, though not a TLS file).
        case signingKey(String)
        /// A PEM file of certificates the gateway trusts as roots (`trust.extra_roots[N]`,
        /// `trust.extra_receipt_roots[N]`): every block must be a certificate that parses.
        case trustRoots(String)
        /// The DeviceCheck key of an app's receipt refresh (`apps[N].risk.private_key_file`): an
        /// unencrypted PKCS#8 PEM P-256 private key (Apple's `.p8`).
        case deviceCheckKey(String)
    }

    /// Key path of the entry that names the files: `listen[1].tls.certificates[0]` (a
    /// `{chain, key}` item) or `upstreams.api.tls.ca`.
    public var path: String
    /// Where that entry starts in the file; nil when unknown.
    public var mark: SourceMark?
    /// The absolute file paths.
    public var files: Files

    /// Creates a reference.
    public init(path: String, mark: SourceMark?, files: Files) {
        self.path = path
        self.mark = mark
        self.files = files
    }

    /// Every absolute file path of the reference: chain then key, or the CA bundle.
    public var filePaths: [String] {
        switch files {
        case .certificate(let pair), .clientCertificate(let pair): return pair.chain == pair.key ? [pair.chain] : [pair.chain, pair.key]
        case .certificateAuthorities(let path), .signingKey(let path), .trustRoots(let path), .deviceCheckKey(let path):
            return [path]
        }
    }

    /// A configuration issue about these files, at this reference's path and position
    /// (e.g. `reference.issue(.error, "\(chain) does not exist")`).
    public func issue(_ severity: ConfigIssue.Severity, _ message: String) -> ConfigIssue {
        ConfigIssue(severity: severity, path: path, message: message, mark: mark)
    }
}
