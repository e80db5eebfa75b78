import AttestCrypto
import GatewayRules

/// Verifies App Attest attestation objects - Apple: "Validating apps that connect to your server",
/// attestation steps 1-9, DESIGN.md section 3 - as a pure function of its inputs: the object, the
/// keyId and clientDataHash the client claims, and the validation time. Trust anchors and accepted
/// apps are configuration. No I/O, no clock.
///
/// Order (the decision names the first failure): CBOR well-formed (`cbor_malformed`), object shape
/// (`attestation_malformed`), `fmt == "apple-appattest"` (`fmt_unsupported`), x5c = [leaf,
/// intermediate] (`x5c_length`, `certificate_malformed`), chain to a pinned App Attest root at `now`
/// (`chain_invalid`), nonce extension well-formed (`nonce_extension_malformed`) and equal to
/// SHA256(authData || clientDataHash) (`nonce_mismatch`), SHA256(leaf point) == keyId
/// (`key_id_mismatch`), authenticatorData well-formed (`auth_data_malformed`), rpIdHash of a
/// configured app (`rp_id_mismatch`), counter 0 (`counter_not_zero`), aaguid allowed for that app
/// (`env_mismatch`), credentialId == keyId (`credential_id_mismatch`), COSE key == leaf key
/// (`cose_key_mismatch`). The receipt is verified as a risk signal only.
///
/// The trace evaluates every check that can be evaluated, even after a failure, using the check
/// names of shared/vectors. Thread-safe (immutable).
public struct AttestationVerifier: Sendable {
    /// Pinned anchors.
    public let trust: TrustAnchors
    /// Accepted apps (rpIdHash must match one of them).
    public let apps: [AppPolicy]

    /// The expected `fmt`.
    public static let format = "apple-appattest"

    /// A verifier for `apps`, pinned to `trust` (default: Apple's roots).
    public init(trust: TrustAnchors = .apple, apps: [AppPolicy]) {
        self.trust = trust
        self.apps = apps
    }

    /// Verifies an attestation made over the gateway's convention: clientDataHash = SHA-256 of the
    /// decoded challenge bytes (DESIGN.md section 1, "Attestation clientDataHash").
    public func verify(attestationObject: [UInt8], keyId: [UInt8], challenge: [UInt8], now: Int64) -> AttestationDecision {
        verify(attestationObject: attestationObject, keyId: keyId, clientDataHash: SHA256.hash(challenge), now: now)
    }

    /// Verifies an attestation.
    /// - Parameters:
    ///   - attestationObject: the CBOR bytes from `DCAppAttestService.attestKey`.
    ///   - keyId: the decoded keyId (32 bytes).
    ///   - clientDataHash: the bytes the app passed to `attestKey` (normally SHA-256 of the challenge).
    ///   - now: the validation time for the certificate chain, seconds since the epoch.
    public func verify(attestationObject: [UInt8], keyId: [UInt8], clientDataHash: [UInt8], now: Int64) -> AttestationDecision {
        var trace = VerificationTrace()
        var failure: (ReasonCode, String)? = nil
        func fail(_ reason: ReasonCode, _ detail: String) { if failure == nil { failure = (reason, detail) } }

        // CBOR and shape.
        let object: AttestationObject
        do {
            let value = try CBORDecoder().decode(attestationObject)
            trace.record(.cborDecodes, value.mapValue != nil)
            object = try AttestationObject(decoded: value)
        } catch let error as AppAttestError {
            return .rejected(error.reason, detail: error.detail, trace: trace)
        } catch {
            trace.record(.cborDecodes, false)
            return .rejected(.cborMalformed, detail: "\(error)", trace: trace)
        }
        let fmtOK = object.fmt == Self.format
        trace.record(.fmt, fmtOK)
        if !fmtOK { fail(.fmtUnsupported, "fmt is \(object.fmt)") }

        // Certificates and chain (step 1).
        var leaf: X509Certificate? = nil
        if object.x5c.count != 2 {
            trace.record(.chain, false)
            fail(.x5cLength, "x5c holds \(object.x5c.count) certificates, expected 2")
        } else {
            do {
                let certificates = try object.x5c.map { try X509Certificate(der: $0) }
                leaf = certificates[0]
                switch trust.appAttestStore.verify(leaf: certificates[0], intermediates: [certificates[1]], at: now) {
                case .valid:
                    trace.record(.chain, true)
                case .invalid(_, let reason):
                    trace.record(.chain, false)
                    fail(.chainInvalid, reason)
                }
            } catch {
                trace.record(.chain, false)
                fail(.certificateMalformed, "\(error)")
            }
        }

        // Nonce (steps 2-4).
        if let leaf {
            do {
                guard let value = try leaf.extensionValue(oid: NonceExtension.oid) else {
                    throw ASN1Error("nonce extension missing", offset: 0)
                }
                let nonce = try NonceExtension.nonce(fromExtensionValue: value)
                let expected = SHA256.hash(object.authData, clientDataHash)
                let match = ConstantTime.equals(nonce, expected)
                trace.record(.nonce, match)
                if !match { fail(.nonceMismatch, "nonce extension differs from SHA256(authData || clientDataHash)") }
            } catch {
                trace.record(.nonce, false)
                fail(.nonceExtensionMalformed, "\(error)")
            }
        }

        // keyId (step 5).
        var leafKey: P256PublicKey? = nil
        if let leaf {
            if let key = try? leaf.publicKeyP256() {
                leafKey = key
                let match = ConstantTime.equals(SHA256.hash(key.x963Representation), keyId)
                trace.record(.keyId, match)
                if !match { fail(keyId.count == 32 ? .keyIdMismatch : .keyIdInvalid, "SHA256(leaf public key) differs from keyId") }
            } else {
                trace.record(.keyId, false)
                fail(.certificateMalformed, "leaf key is not a P-256 key")
            }
        }

        // authenticatorData (steps 6-9).
        let authData: AuthenticatorData
        do {
            authData = try AuthenticatorData(object.authData, kind: .attestation)
        } catch {
            fail(.authDataMalformed, "\(error)")
            return finish(failure, trace, nil)
        }
        let app = apps.first { ConstantTime.equals($0.rpIdHash, authData.rpIdHash) }
        trace.record(.rpIdHash, app != nil)
        if app == nil { fail(.rpIdMismatch, "rpIdHash matches no configured App ID") }
        trace.record(.counterZero, authData.counter == 0)
        if authData.counter != 0 { fail(.counterNotZero, "counter is \(authData.counter)") }
        let environment = authData.aaguid.flatMap { AppAttestEnvironment(aaguid: $0) }
        let allowed: Bool
        if let environment {
            allowed = app.map { $0.environment.allows(environment) } ?? apps.contains { $0.environment.allows(environment) }
        } else {
            allowed = false
        }
        trace.record(.aaguid, allowed)
        if !allowed { fail(.envMismatch, environment.map { "environment \($0.rawValue) not allowed" } ?? "unknown aaguid") }
        let credentialMatch = ConstantTime.equals(authData.credentialId ?? [], keyId)
        trace.record(.credentialId, credentialMatch)
        if !credentialMatch { fail(.credentialIdMismatch, "credentialId differs from keyId") }
        if let leafKey {
            let match = ConstantTime.equals(authData.credentialPublicKey?.x963Representation ?? [], leafKey.x963Representation)
            trace.record(.coseKeyMatchesLeaf, match)
            if !match { fail(.coseKeyMismatch, "COSE key differs from the leaf certificate key") }
        }

        // Receipt (risk signal).
        var receiptVerification: ReceiptVerification? = nil
        var keptReceipt = object.receipt
        if let receipt = object.receipt {
            var result = ReceiptVerifier(trust: trust).verify(receipt)
            trace.record(.receiptSignature, result.isValid)
            if let decoded = result.receipt {
                let clientHashMatches = decoded.clientHash.map { ConstantTime.equals($0, clientDataHash) } ?? false
                if decoded.clientHash != nil { trace.record(.receiptClientHashMatches, clientHashMatches) }
                // A receipt is this attestation's only when it names this key, this app and this
                // client hash: another device's receipt (a valid Apple signature over another key)
                // would otherwise be stored as this key's risk metric and later sent to Apple for it.
                let keyMatches = decoded.attestedKeyId.map { ConstantTime.equals($0, keyId) } ?? false
                if !(clientHashMatches && keyMatches && app != nil && decoded.appId == app?.appId) {
                    result = ReceiptVerification(receipt: decoded, signedAttributesPresent: result.signedAttributesPresent,
                                                 signedContent: nil, signatureValid: false, signerChainValid: result.signerChainValid,
                                                 failure: .receiptNotBound,
                                                 detail: "the receipt names another key, app or client hash (\(decoded.appId ?? "no app"))")
                    keptReceipt = nil
                }
            }
            receiptVerification = result
        }

        guard failure == nil, let leaf, let leafKey, let app, let environment else { return finish(failure, trace, nil) }
        let key = AttestedKey(keyId: keyId, publicKey: leafKey, environment: environment, appId: app.appId, counter: 0,
                              attestedAt: now, certificateNotAfter: leaf.notAfter, receipt: keptReceipt,
                              receiptVerification: receiptVerification, signals: authData.signals)
        return .accepted(key, trace: trace)
    }

    private func finish(_ failure: (ReasonCode, String)?, _ trace: VerificationTrace, _ key: AttestedKey?) -> AttestationDecision {
        if let failure { return .rejected(failure.0, detail: failure.1, trace: trace) }
        return .rejected(.attestationMalformed, detail: "incomplete attestation", trace: trace)
    }
}
