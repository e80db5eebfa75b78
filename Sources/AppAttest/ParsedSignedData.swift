import AttestCrypto

/// The parts of a CMS SignedData that receipt verification needs.
struct ParsedSignedData {
    let eContent: [UInt8]
    let certificates: [X509Certificate]
    let signer: X509Certificate?
    let signedAttributes: SignedAttributes?
    let signature: [UInt8]

    struct SignedAttributes {
        let derForSignature: [UInt8]
        let messageDigest: [UInt8]?
        let contentTypeIsData: Bool
    }

    init(_ bytes: [UInt8]) throws {
        let root = try ASN1Reader(rules: .ber, maxDepth: 24).parse(bytes)
        // ContentInfo ::= SEQUENCE { contentType OID, content [0] EXPLICIT ANY }
        guard root.isUniversal(ASN1Node.Universal.sequence), root.children.count == 2,
              try root.children[0].objectIdentifier() == ReceiptVerifier.oidSignedData,
              root.children[1].isContext(0), root.children[1].isConstructed, root.children[1].children.count == 1 else {
            throw ASN1Error("not a CMS ContentInfo of type signedData", offset: 0)
        }
        let signedData = root.children[1].children[0]
        guard signedData.isUniversal(ASN1Node.Universal.sequence), signedData.children.count >= 4 else {
            throw ASN1Error("SignedData is not a SEQUENCE of at least 4 elements", offset: signedData.start)
        }
        let parts = signedData.children
        _ = try parts[0].smallInteger()
        guard parts[1].isUniversal(ASN1Node.Universal.set) else { throw ASN1Error("digestAlgorithms is not a SET", offset: parts[1].start) }
        // EncapsulatedContentInfo ::= SEQUENCE { eContentType OID, eContent [0] EXPLICIT OCTET STRING }
        let encap = parts[2]
        guard encap.isUniversal(ASN1Node.Universal.sequence), encap.children.count == 2,
              try encap.children[0].objectIdentifier() == ReceiptVerifier.oidData,
              encap.children[1].isContext(0), encap.children[1].children.count == 1,
              encap.children[1].children[0].isUniversal(ASN1Node.Universal.octetString) else {
            throw ASN1Error("encapsulated content is not id-data with an OCTET STRING", offset: encap.start)
        }
        eContent = try encap.children[1].children[0].octets()
        var certificates: [X509Certificate] = []
        var signerInfos: ASN1Node? = nil
        for part in parts.dropFirst(3) {
            if part.isContext(0) && part.isConstructed {
                guard certificates.isEmpty else { throw ASN1Error("two certificate sets", offset: part.start) }
                for child in part.children {
                    guard child.isUniversal(ASN1Node.Universal.sequence) else { throw ASN1Error("certificate choice not supported", offset: child.start) }
                    do {
                        certificates.append(try X509Certificate(der: Array(child.encoded)))
                    } catch {
                        throw ASN1Error("certificate: \(error)", offset: child.start)
                    }
                }
            } else if part.isContext(1) {
                continue  // crls: not used
            } else if part.isUniversal(ASN1Node.Universal.set) {
                guard signerInfos == nil else { throw ASN1Error("two SignerInfo sets", offset: part.start) }
                signerInfos = part
            } else {
                throw ASN1Error("unexpected element in SignedData", offset: part.start)
            }
        }
        guard let infos = signerInfos, infos.children.count == 1 else { throw ASN1Error("expected exactly one SignerInfo", offset: signedData.start) }
        let info = infos.children[0]
        // SignerInfo ::= SEQUENCE { version, sid, digestAlgorithm, [0] signedAttrs OPTIONAL,
        //                           signatureAlgorithm, signature OCTET STRING, [1] unsignedAttrs OPTIONAL }
        guard info.isUniversal(ASN1Node.Universal.sequence), info.children.count >= 5 else {
            throw ASN1Error("SignerInfo is not a SEQUENCE of at least 5 elements", offset: info.start)
        }
        var fields = info.children[...]
        _ = try fields.removeFirst().smallInteger()
        let sid = fields.removeFirst()
        guard sid.isUniversal(ASN1Node.Universal.sequence), sid.children.count == 2 else {
            throw ASN1Error("SignerIdentifier is not issuerAndSerialNumber", offset: sid.start)
        }
        let issuerDER = Array(sid.children[0].encoded)
        let serialNode = sid.children[1]
        guard serialNode.isUniversal(ASN1Node.Universal.integer) else { throw ASN1Error("serial is not an INTEGER", offset: serialNode.start) }
        let serial = Array(serialNode.content.drop { $0 == 0 })
        let digestAlgorithm = fields.removeFirst()
        guard try digestAlgorithm.children.first?.objectIdentifier() == ReceiptVerifier.oidSHA256 else {
            throw ASN1Error("digest algorithm is not SHA-256", offset: digestAlgorithm.start)
        }
        var attributes: SignedAttributes? = nil
        if let next = fields.first, next.isContext(0) {
            fields.removeFirst()
            attributes = try Self.readSignedAttributes(next)
        }
        guard fields.count >= 2 else { throw ASN1Error("SignerInfo truncated", offset: info.start) }
        let signatureAlgorithm = fields.removeFirst()
        guard try signatureAlgorithm.children.first?.objectIdentifier() == ReceiptVerifier.oidECDSAWithSHA256 else {
            throw ASN1Error("signature algorithm is not ecdsa-with-SHA256", offset: signatureAlgorithm.start)
        }
        let signatureNode = fields.removeFirst()
        guard signatureNode.isUniversal(ASN1Node.Universal.octetString) else { throw ASN1Error("signature is not an OCTET STRING", offset: signatureNode.start) }
        signature = try signatureNode.octets()
        if let rest = fields.first, !(rest.isContext(1) && fields.count == 1) {
            throw ASN1Error("unexpected element after the signature", offset: rest.start)
        }
        self.certificates = certificates
        self.signedAttributes = attributes
        self.signer = certificates.first { $0.serialNumber.drop(while: { $0 == 0 }).elementsEqual(serial) && $0.issuerDER == issuerDER }
    }

    private static func readSignedAttributes(_ node: ASN1Node) throws -> SignedAttributes {
        var digest: [UInt8]? = nil
        var contentTypeIsData = false
        var seen: Set<String> = []
        for attribute in node.children {
            guard attribute.isUniversal(ASN1Node.Universal.sequence), attribute.children.count == 2,
                  attribute.children[1].isUniversal(ASN1Node.Universal.set) else {
                throw ASN1Error("malformed signed attribute", offset: attribute.start)
            }
            let oid = try attribute.children[0].objectIdentifier()
            guard seen.insert(oid).inserted else { throw ASN1Error("duplicate signed attribute \(oid)", offset: attribute.start) }
            let values = attribute.children[1].children
            if oid == ReceiptVerifier.oidMessageDigest {
                guard values.count == 1, values[0].isUniversal(ASN1Node.Universal.octetString) else {
                    throw ASN1Error("malformed messageDigest", offset: attribute.start)
                }
                digest = try values[0].octets()
            } else if oid == ReceiptVerifier.oidContentType {
                guard values.count == 1 else { throw ASN1Error("malformed contentType", offset: attribute.start) }
                contentTypeIsData = try values[0].objectIdentifier() == ReceiptVerifier.oidData
            }
        }
        guard seen.contains(ReceiptVerifier.oidContentType) else { throw ASN1Error("signed attributes without contentType", offset: node.start) }
        // RFC 5652 section 5.4: the signature covers the DER of SET OF Attribute (tag 0x31, not [0]).
        return SignedAttributes(derForSignature: ASN1DER.reencode(node, asTag: 0x31), messageDigest: digest, contentTypeIsData: contentTypeIsData)
    }
}
