import AttestCrypto

/// Parses and verifies App Attest receipts (`attStmt.receipt`, or refreshed receipts from Apple's
/// receipt endpoint): CMS SignedData (RFC 5652) in BER with indefinite lengths and a segmented
/// eContent, parsed strictly by this module's BER reader.
///
/// Checks: one SignerInfo identified by issuer and serial, digest SHA-256, signature
/// ecdsa-with-SHA256; the signer certificate is "Application Attestation Fraud Receipt Signing" and
/// chains (with the other certificates of the message as untrusted intermediates) to a pinned
/// receipt root (Apple Root CA - G3) at the receipt's creation time (field 12). The signature must
/// verify over the DER signed attributes (RFC 5652), or - the documented quirk of 2020 receipts -
/// over the eContent; when signed attributes are present their messageDigest must equal
/// SHA-256(eContent) and their contentType must be id-data.
public struct ReceiptVerifier: Sendable {
    /// Pinned roots (only `receiptStore` is used).
    public let trust: TrustAnchors

    /// Common name of Apple's receipt signing certificate.
    public static let signerCommonName = "Application Attestation Fraud Receipt Signing"

    static let oidSignedData = "1.2.840.113549.1.7.2"
    static let oidData = "1.2.840.113549.1.7.1"
    static let oidSHA256 = "2.16.840.1.101.3.4.2.1"
    static let oidECDSAWithSHA256 = "1.2.840.10045.4.3.2"
    static let oidContentType = "1.2.840.113549.1.9.3"
    static let oidMessageDigest = "1.2.840.113549.1.9.4"

    /// A verifier pinned to `trust.receiptStore`.
    public init(trust: TrustAnchors = .apple) { self.trust = trust }

    /// Parses and verifies `receipt`. Never throws: problems are in the result.
    public func verify(_ receipt: [UInt8]) -> ReceiptVerification {
        let parsed: ParsedSignedData
        do {
            parsed = try ParsedSignedData(receipt)
        } catch {
            return ReceiptVerification(receipt: nil, signedAttributesPresent: false, signedContent: nil, signatureValid: false,
                                       signerChainValid: false, failure: .receiptMalformed, detail: "\(error)")
        }
        let decoded: Receipt
        do {
            decoded = try Receipt(payload: parsed.eContent)
        } catch {
            return ReceiptVerification(receipt: nil, signedAttributesPresent: parsed.signedAttributes != nil, signedContent: nil,
                                       signatureValid: false, signerChainValid: false, failure: .receiptMalformed,
                                       detail: "payload: \(error)")
        }
        // Signature.
        var signedContent: ReceiptVerification.SignedContent? = nil
        var signatureProblem = ""
        if let signer = parsed.signer, let key = try? signer.publicKeyP256() {
            if let attributes = parsed.signedAttributes {
                if !attributes.contentTypeIsData {
                    signatureProblem = "contentType attribute is not id-data"
                } else if !ConstantTime.equals(attributes.messageDigest ?? [], SHA256.hash(parsed.eContent)) {
                    signatureProblem = "messageDigest attribute does not match SHA-256(eContent)"
                } else if key.verify(signature: parsed.signature, message: attributes.derForSignature) == .valid {
                    signedContent = .signedAttributes
                } else if key.verify(signature: parsed.signature, message: parsed.eContent) == .valid {
                    signedContent = .eContent
                } else {
                    signatureProblem = "signature does not verify"
                }
            } else if key.verify(signature: parsed.signature, message: parsed.eContent) == .valid {
                signedContent = .eContent
            } else {
                signatureProblem = "signature does not verify"
            }
        } else {
            signatureProblem = parsed.signer == nil ? "no certificate matches the SignerInfo" : "signer key is not P-256"
        }
        // Signer chain at the receipt's creation time.
        var chainValid = false
        var chainProblem = ""
        if let signer = parsed.signer {
            if signer.subjectCommonName != Self.signerCommonName {
                chainProblem = "signer is not \(Self.signerCommonName)"
            } else if let created = decoded.creationTime {
                let others = parsed.certificates.filter { $0 !== signer }
                switch trust.receiptStore.verify(leaf: signer, intermediates: others, at: created) {
                case .valid: chainValid = true
                case .invalid(_, let reason): chainProblem = "signer chain: \(reason)"
                }
            } else {
                chainProblem = "no creation time"
            }
        } else {
            chainProblem = "no signer certificate"
        }
        let signatureValid = signedContent != nil
        let failure: ReasonCode? = !signatureValid ? .receiptSignatureInvalid : (!chainValid ? .receiptChainInvalid : nil)
        return ReceiptVerification(receipt: decoded, signedAttributesPresent: parsed.signedAttributes != nil,
                                   signedContent: signedContent, signatureValid: signatureValid, signerChainValid: chainValid,
                                   failure: failure, detail: [signatureProblem, chainProblem].filter { !$0.isEmpty }.joined(separator: "; "))
    }
}
