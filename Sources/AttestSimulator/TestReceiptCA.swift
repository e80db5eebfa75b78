import AppAttest
import AttestCrypto

/// A test stand-in for Apple's receipt signing (never Apple's): a root ("TEST Receipt Root CA") and a
/// signer whose common name is Apple's, "Application Attestation Fraud Receipt Signing", issuing
/// receipts in Apple's format - CMS SignedData (RFC 5652) with signed attributes (contentType id-data,
/// messageDigest), digest SHA-256, signature ecdsa-with-SHA256 by the signer, the signer certificate
/// in the message - around the receipt payload (a SET OF `SEQUENCE { INTEGER type, INTEGER version,
/// OCTET STRING value }`).
///
/// A gateway or verifier accepts these receipts only when the root is pinned as a receipt root
/// (`TrustAnchors(appAttestRoots:receiptRoots:)`, gateway `trust.extra_receipt_roots`). The CMS and
/// ASN.1 structure is written with `DERWriter` (DER); signatures and digests come from AttestCrypto.
public struct TestReceiptCA: Sendable {
    /// Common name of the test root.
    public static let rootCommonName = "TEST Receipt Root CA"

    /// The self-signed root (P-256).
    public let root: X509Certificate
    /// The signer certificate, issued by the root.
    public let signer: X509Certificate
    /// The signer's key.
    public let signerKey: ECPrivateKey

    /// Generates a root and a signer valid from `notBefore` to `notAfter` (seconds since the epoch;
    /// default 2020-01-01 to 2045-01-01).
    /// - Throws: `SimulatorError.invalidArgument` for an empty window; `CryptoError` from OpenSSL.
    public static func generate(notBefore: Int64 = CivilTime.secondsSinceEpoch(year: 2020, month: 1, day: 1, hour: 0, minute: 0, second: 0),
                                notAfter: Int64 = CivilTime.secondsSinceEpoch(year: 2045, month: 1, day: 1, hour: 0, minute: 0, second: 0)) throws -> TestReceiptCA {
        guard notBefore < notAfter else { throw SimulatorError.invalidArgument("receipt CA validity must end after it starts") }
        let rootKey = try ECPrivateKey(generatingOn: .p256)
        let rootName = [NameAttribute("CN", rootCommonName), NameAttribute("O", TestCA.organization)]
        var rootBuilder = CertificateBuilder(subject: rootName, issuer: rootName, serialNumber: try TestCA.serialNumber(),
                                             notBefore: notBefore, notAfter: notAfter)
        rootBuilder.addBasicConstraints(ca: true, pathLength: nil)
        rootBuilder.addSubjectKeyIdentifier(for: rootKey.publicKeyPoint)
        rootBuilder.addKeyUsage([.keyCertSign, .cRLSign])
        let root = try rootBuilder.sign(subjectPublicKey: rootKey, issuerKey: rootKey, digest: .sha256)

        let signerKey = try ECPrivateKey(generatingOn: .p256)
        var builder = CertificateBuilder(subject: [NameAttribute("CN", ReceiptVerifier.signerCommonName), NameAttribute("O", TestCA.organization)],
                                         issuer: root.subjectAttributes, serialNumber: try TestCA.serialNumber(),
                                         notBefore: notBefore, notAfter: notAfter)
        builder.addBasicConstraints(ca: false)
        builder.addAuthorityKeyIdentifier(issuerPublicKeyPoint: rootKey.publicKeyPoint)
        builder.addSubjectKeyIdentifier(for: signerKey.publicKeyPoint)
        builder.addKeyUsage([.digitalSignature])
        let signer = try builder.sign(subjectPublicKey: signerKey, issuerKey: rootKey, digest: .sha256)
        return TestReceiptCA(root: root, signer: signer, signerKey: signerKey)
    }

    /// The payload DER (SET OF field sequences, version 1 each).
    public static func payload(_ fields: ReceiptFields) -> [UInt8] {
        func field(_ type: UInt64, _ value: [UInt8]) -> [UInt8] {
            DERWriter.sequence([DERWriter.integer(type), DERWriter.integer(1), DERWriter.octetString(value)])
        }
        var items = [field(2, Array(fields.appId.utf8)), field(3, fields.attestedCertificate), field(4, fields.clientHash),
                     field(5, Array(fields.token.utf8)), field(6, Array(fields.type.utf8))]
        if let environment = fields.environment { items.append(field(7, Array(environment.utf8))) }
        items.append(field(12, Array(CivilTime.iso8601(fields.creationTime).utf8)))
        if let risk = fields.riskMetric { items.append(field(17, Array(String(risk).utf8))) }
        items.append(field(19, Array(CivilTime.iso8601(fields.notBefore).utf8)))
        items.append(field(21, Array(CivilTime.iso8601(fields.expirationTime).utf8)))
        return DERWriter.tlv(0x31, items.sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 })
    }

    /// A receipt (CMS SignedData, DER) carrying `fields`, signed by `signer`.
    /// - Throws: `CryptoError` from signing.
    public func mint(_ fields: ReceiptFields) throws -> [UInt8] {
        let payload = Self.payload(fields)
        func oid(_ dotted: String) -> [UInt8] { DERWriter.objectIdentifier(dotted) ?? [] }
        let sha256 = DERWriter.sequence([oid("2.16.840.1.101.3.4.2.1")])
        let attributes = [
            DERWriter.sequence([oid("1.2.840.113549.1.9.3"), DERWriter.tlv(0x31, oid("1.2.840.113549.1.7.1"))]),
            DERWriter.sequence([oid("1.2.840.113549.1.9.4"), DERWriter.tlv(0x31, DERWriter.octetString(SHA256.hash(payload)))]),
        ].sorted { $0.lexicographicallyPrecedes($1) }.flatMap { $0 }
        let signature = try signerKey.signature(for: DERWriter.tlv(0x31, attributes), digest: .sha256)
        var serial = signer.serialNumber
        if let first = serial.first, first & 0x80 != 0 { serial.insert(0, at: 0) }
        let signerInfo = DERWriter.sequence([
            DERWriter.integer(1),
            DERWriter.sequence([signer.issuerDER, DERWriter.tlv(0x02, serial)]),
            sha256,
            DERWriter.tlv(0xA0, attributes),
            DERWriter.sequence([oid("1.2.840.10045.4.3.2")]),
            DERWriter.octetString(signature),
        ])
        let signedData = DERWriter.sequence([
            DERWriter.integer(1),
            DERWriter.tlv(0x31, sha256),
            DERWriter.sequence([oid("1.2.840.113549.1.7.1"), DERWriter.tlv(0xA0, DERWriter.octetString(payload))]),
            DERWriter.tlv(0xA0, signer.derBytes),
            DERWriter.tlv(0x31, signerInfo),
        ])
        return DERWriter.sequence([oid("1.2.840.113549.1.7.2"), DERWriter.tlv(0xA0, signedData)])
    }

    /// Verifier anchors pinning `appAttestRoots` for attestations and this root for receipts.
    public func trustAnchors(appAttestRoots: [X509Certificate]) throws -> TrustAnchors {
        try TrustAnchors(appAttestRoots: appAttestRoots, receiptRoots: [root])
    }
}
