import AttestCrypto

/// The decoded payload of an App Attest receipt (the eContent of its CMS SignedData): a SET OF
/// `SEQUENCE { INTEGER type, INTEGER version, OCTET STRING value }` (Apple: "Assessing fraud risk").
///
/// Field types: 2 App ID, 3 attested public key (the credential certificate, DER), 4 client hash,
/// 5 token, 6 receipt type ("ATTEST" / "RECEIPT"), 7 environment ("sandbox" / "production"),
/// 12 creation time, 17 risk metric (refreshed receipts), 19 not-before, 21 expiration time.
/// Times are ISO 8601 text; they are given here in seconds since the epoch too.
public struct Receipt: Sendable, Equatable {
    /// Field 2.
    public let appId: String?
    /// Field 3: DER of the attested credential certificate.
    public let attestedCertificate: [UInt8]?
    /// SHA-256 of the uncompressed point of field 3's key (comparable with a keyId), when it parses.
    public let attestedKeyId: [UInt8]?
    /// Field 4 (in ATTEST receipts the clientDataHash; refreshed receipts carry mangled bytes).
    public let clientHash: [UInt8]?
    /// Field 5.
    public let token: String?
    /// Field 6.
    public let type: String?
    /// Field 7.
    public let environment: String?
    /// Field 12 as text.
    public let creationTimeText: String?
    /// Field 12, seconds since the epoch.
    public let creationTime: Int64?
    /// Field 17 (refreshed receipts).
    public let riskMetric: Int?
    /// Field 19, seconds since the epoch.
    public let notBefore: Int64?
    /// Field 21, seconds since the epoch.
    public let expirationTime: Int64?
    /// Every field type present, ascending.
    public let fieldTypes: [Int]

    /// Decodes the eContent payload.
    /// - Throws: `ASN1Error` when it is not a SET OF the sequences above.
    init(payload: [UInt8]) throws {
        let set = try ASN1Reader(rules: .ber, maxDepth: 8).parse(payload)
        guard set.isUniversal(ASN1Node.Universal.set), set.isConstructed else { throw ASN1Error("receipt payload is not a SET", offset: 0) }
        var fields: [Int: [UInt8]] = [:]
        var types: Set<Int> = []
        for item in set.children {
            guard item.isUniversal(ASN1Node.Universal.sequence), item.children.count == 3 else {
                throw ASN1Error("receipt field is not SEQUENCE { INTEGER, INTEGER, OCTET STRING }", offset: item.start)
            }
            let type = Int(try item.children[0].smallInteger())
            _ = try item.children[1].smallInteger()
            guard item.children[2].isUniversal(ASN1Node.Universal.octetString) else {
                throw ASN1Error("receipt field value is not an OCTET STRING", offset: item.children[2].start)
            }
            let value = try item.children[2].octets()
            types.insert(type)
            if fields[type] == nil { fields[type] = value }
        }
        func text(_ t: Int) -> String? { fields[t].map { String(decoding: $0, as: UTF8.self) } }
        appId = text(2)
        attestedCertificate = fields[3]
        if let der = fields[3], let cert = try? X509Certificate(der: der), let point = cert.publicKeyPoint {
            attestedKeyId = SHA256.hash(point)
        } else {
            attestedKeyId = nil
        }
        clientHash = fields[4]
        token = text(5)
        type = text(6)
        environment = text(7)
        creationTimeText = text(12)
        creationTime = creationTimeText.flatMap(CivilTime.parseISO8601)
        riskMetric = text(17).flatMap { Int($0) }
        notBefore = text(19).flatMap(CivilTime.parseISO8601)
        expirationTime = text(21).flatMap(CivilTime.parseISO8601)
        fieldTypes = types.sorted()
    }
}
