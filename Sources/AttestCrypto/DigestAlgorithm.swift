/// Hash functions for ECDSA signing (FIPS 180-4).
public enum DigestAlgorithm: String, Sendable, CaseIterable {
    /// SHA-256: ecdsa-with-SHA256 (App Attest leaves, receipts, assertions).
    case sha256 = "SHA256"
    /// SHA-384: ecdsa-with-SHA384 (Apple's App Attestation root and intermediate).
    case sha384 = "SHA384"

    var messageDigest: MessageDigest { self == .sha256 ? .sha256 : .sha384 }
}
