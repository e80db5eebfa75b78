import AttestCrypto

/// An attestation minted by `SoftwareDevice.mintAttestation`, with the values a server needs to
/// verify it (what `DCAppAttestService.generateKey` + `attestKey` hand to an app).
public struct MintedAttestation: Sendable {
    /// keyId = SHA-256 of the 65-byte public key point (32 bytes; base64 of it is the app's keyId).
    public let keyId: [UInt8]
    /// The CBOR attestation object: `{"fmt": "apple-appattest", "attStmt": {"x5c": [leaf DER,
    /// intermediate DER], "receipt": bytes}, "authData": bytes}`.
    public let attestationObject: [UInt8]
    /// The clientDataHash the nonce was computed with (SHA-256 of the challenge unless overridden).
    public let clientDataHash: [UInt8]
    /// authenticatorData exactly as inside the object.
    public let authenticatorData: [UInt8]
    /// nonce = SHA256(authenticatorData || clientDataHash), as in the leaf's nonce extension.
    public let nonce: [UInt8]
    /// The credential (leaf) certificate.
    public let credentialCertificate: X509Certificate
}
