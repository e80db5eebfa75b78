/// An assertion minted by `SoftwareDevice.mintAssertion` (what `generateAssertion` returns), with
/// the inputs it was made over.
public struct MintedAssertion: Sendable {
    /// The signing key's keyId (32 bytes).
    public let keyId: [UInt8]
    /// The CBOR assertion: `{"signature": DER ECDSA-SHA256, "authenticatorData": bytes}`.
    public let assertionObject: [UInt8]
    /// The client data that was hashed (binding v1 bytes or arbitrary bytes).
    public let clientData: [UInt8]
    /// SHA-256 of `clientData` (what an app passes to `generateAssertion`).
    public let clientDataHash: [UInt8]
    /// authenticatorData exactly as inside the object.
    public let authenticatorData: [UInt8]
    /// nonce = SHA256(authenticatorData || clientDataHash): the signed **message**.
    public let nonce: [UInt8]
    /// The DER ECDSA signature over the nonce (digest signed = SHA256(nonce)).
    public let signature: [UInt8]
    /// The counter in authenticatorData.
    public let counter: UInt32
}
