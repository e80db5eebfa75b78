/// The elliptic curves AttestCrypto supports (NIST / SEC 2 names).
public enum ECCurve: String, Sendable, CaseIterable {
    /// NIST P-256 (secp256r1, prime256v1): App Attest device keys, receipt signer.
    case p256 = "P-256"
    /// NIST P-384 (secp384r1): Apple's App Attestation root and intermediate.
    case p384 = "P-384"

    /// OpenSSL group name.
    var groupName: String { self == .p256 ? "prime256v1" : "secp384r1" }
    /// Names OpenSSL may report for this group.
    var groupNames: [String] { self == .p256 ? ["prime256v1", "P-256", "secp256r1"] : ["secp384r1", "P-384"] }
    /// Size of one coordinate (and of a scalar) in bytes: 32 or 48.
    public var coordinateByteCount: Int { self == .p256 ? 32 : 48 }
}
