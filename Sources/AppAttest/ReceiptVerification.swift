/// Result of checking an App Attest receipt: what it says and whether Apple signed it.
///
/// Receipts are risk signals (DESIGN.md section 3): a failed receipt is reported here and does not by
/// itself fail an attestation.
public struct ReceiptVerification: Sendable, Equatable {
    /// What the signature covers.
    public enum SignedContent: String, Sendable {
        /// The DER of the signed attributes (RFC 5652 section 5.4).
        case signedAttributes = "signed_attributes"
        /// The eContent itself: receipts without signed attributes, and the documented 2020 quirk
        /// (signed attributes present, with a correct messageDigest, but the signature over the eContent).
        case eContent = "econtent"
    }

    /// The decoded payload (nil when the CMS structure or payload could not be parsed).
    public let receipt: Receipt?
    /// Whether the CMS SignerInfo carried signed attributes.
    public let signedAttributesPresent: Bool
    /// What the valid signature covers (nil when not valid).
    public let signedContent: SignedContent?
    /// The ECDSA signature verifies with the signer certificate (and messageDigest matches, if present).
    public let signatureValid: Bool
    /// The signer chains to a pinned receipt root at the receipt's creation time and is the Fraud
    /// Receipt Signing certificate.
    public let signerChainValid: Bool
    /// The first problem found (nil when everything is valid).
    public let failure: ReasonCode?
    /// Detail for logs.
    public let detail: String

    /// True when the signature and the signer chain are valid.
    public var isValid: Bool { signatureValid && signerChainValid }
}
