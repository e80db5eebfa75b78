/// The App Attest nonce extension of the credential certificate, OID 1.2.840.113635.100.8.2
/// (Apple: "Validating apps that connect to your server", attestation step 4).
///
/// Its value is `SEQUENCE { [1] EXPLICIT OCTET STRING (32 bytes) }`, parsed here as strict DER -
/// never sliced at fixed offsets: long-form lengths where short form is required, other lengths than
/// 32, extra elements and trailing bytes are all refused.
public enum NonceExtension {
    /// Dotted OID of the extension.
    public static let oid = "1.2.840.113635.100.8.2"

    /// The 32-byte nonce inside the DER extension value.
    /// - Throws: `ASN1Error` when the value is not exactly the structure above.
    public static func nonce(fromExtensionValue value: [UInt8]) throws -> [UInt8] {
        let sequence = try ASN1Reader(rules: .der, maxDepth: 4).parse(value)
        guard sequence.isUniversal(ASN1Node.Universal.sequence), sequence.isConstructed, sequence.children.count == 1 else {
            throw ASN1Error("expected SEQUENCE of one element", offset: 0)
        }
        let tagged = sequence.children[0]
        guard tagged.isContext(1), tagged.isConstructed, tagged.children.count == 1 else {
            throw ASN1Error("expected [1] EXPLICIT with one element", offset: tagged.start)
        }
        let octets = tagged.children[0]
        guard octets.isUniversal(ASN1Node.Universal.octetString), !octets.isConstructed else {
            throw ASN1Error("expected OCTET STRING", offset: octets.start)
        }
        guard octets.content.count == 32 else {
            throw ASN1Error("nonce is \(octets.content.count) bytes, expected 32", offset: octets.start)
        }
        return Array(octets.content)
    }
}
