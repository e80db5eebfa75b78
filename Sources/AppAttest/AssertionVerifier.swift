import AttestCrypto

/// Verifies App Attest assertions - Apple: "Validating apps that connect to your server", assertion
/// steps 1-5 (step 6, the challenge, is the caller's store) - as a pure function of its inputs.
///
/// The assertion is CBOR `{"signature": bytes, "authenticatorData": bytes}`. The signature is ECDSA
/// P-256 / SHA-256 in strict DER over the **message** nonce = SHA256(authenticatorData ||
/// clientDataHash); the digest actually signed is therefore SHA256(nonce). Order (first failure is
/// the reason): `cbor_malformed`, `assertion_malformed`, `auth_data_malformed`, `signature_encoding`,
/// `bad_signature`, `rp_id_mismatch`, `counter_replay`.
///
/// Hot path: the caller passes a cached `P256PublicKey`; the work is one small CBOR decode, two or
/// three SHA-256 and one ECDSA verification. Thread-safe (stateless).
public enum AssertionVerifier {
    /// Verifies an assertion over `clientData` (hashed here with SHA-256).
    /// - Parameters:
    ///   - assertionObject: CBOR bytes from `DCAppAttestService.generateAssertion`.
    ///   - publicKey: the attested key of this keyId.
    ///   - appId: "TEAMID.bundle.id" (rpIdHash = SHA256(appId)).
    ///   - clientData: the client data the app hashed (the gateway's binding v1 bytes).
    ///   - previousCounter: the stored counter, or nil to skip the replay check (then any counter passes).
    public static func verify(assertionObject: [UInt8], publicKey: P256PublicKey, appId: String, clientData: [UInt8],
                              previousCounter: UInt32?) -> AssertionDecision {
        verify(assertionObject: assertionObject, publicKey: publicKey, rpIdHash: SHA256.hash(utf8: appId),
               clientDataHash: SHA256.hash(clientData), previousCounter: previousCounter)
    }

    /// Verifies an assertion given the App ID's policy (precomputed rpIdHash) and the client data.
    public static func verify(assertionObject: [UInt8], publicKey: P256PublicKey, app: AppPolicy, clientData: [UInt8],
                              previousCounter: UInt32?) -> AssertionDecision {
        verify(assertionObject: assertionObject, publicKey: publicKey, rpIdHash: app.rpIdHash,
               clientDataHash: SHA256.hash(clientData), previousCounter: previousCounter)
    }

    /// Verifies an assertion given rpIdHash (32 bytes) and clientDataHash (the bytes the app passed
    /// to `generateAssertion`, normally SHA256(clientData)).
    public static func verify(assertionObject: [UInt8], publicKey: P256PublicKey, rpIdHash: [UInt8], clientDataHash: [UInt8],
                              previousCounter: UInt32?) -> AssertionDecision {
        var trace = VerificationTrace()
        let decoder = CBORDecoder()
        let signature: [UInt8]
        let rawAuthData: [UInt8]
        if let fields = flatFields(assertionObject, decoder: decoder) {
            (signature, rawAuthData) = fields
        } else {
            // Any other shape: the full strict decoder decides (and names the refusal).
            let value: CBORValue
            do {
                value = try decoder.decode(assertionObject)
            } catch {
                return .rejected(.cborMalformed, detail: "\(error)", trace: trace)
            }
            guard let s = value["signature"]?.bytesValue, let a = value["authenticatorData"]?.bytesValue else {
                return .rejected(.assertionMalformed, detail: "signature or authenticatorData missing or not bytes", trace: trace)
            }
            signature = s
            rawAuthData = a
        }
        let authData: AuthenticatorData
        do {
            authData = try AuthenticatorData(rawAuthData, kind: .assertion)
        } catch {
            return .rejected(.authDataMalformed, detail: "\(error)", trace: trace)
        }
        var failure: (ReasonCode, String)? = nil
        // Steps 1-3: nonce = SHA256(authenticatorData || clientDataHash); ECDSA-SHA256 over the nonce.
        let nonce = SHA256.hash(rawAuthData, clientDataHash)
        switch publicKey.verify(signature: signature, message: nonce) {
        case .valid:
            trace.record(.signature, true)
        case .invalid:
            trace.record(.signature, false)
            failure = (.badSignature, "signature does not verify over the nonce")
        case .malformedEncoding:
            trace.record(.signature, false)
            failure = (.signatureEncoding, "signature is not strict DER")
        }
        // Step 4: rpIdHash.
        let rpMatch = ConstantTime.equals(authData.rpIdHash, rpIdHash)
        trace.record(.rpIdHash, rpMatch)
        if !rpMatch && failure == nil { failure = (.rpIdMismatch, "rpIdHash differs from SHA256(appId)") }
        // Step 5: counter strictly greater than the stored one.
        if let previousCounter {
            let increasing = authData.counter > previousCounter
            trace.record(.counterGreaterThanPrevious, increasing)
            if !increasing && failure == nil { failure = (.counterReplay, "counter \(authData.counter) is not above \(previousCounter)") }
        }
        if let failure { return .rejected(failure.0, detail: failure.1, trace: trace) }
        return .accepted(VerifiedAssertion(counter: authData.counter, flags: authData.flags, signals: authData.signals, trace: trace))
    }

    /// `signature` and `authenticatorData` of the usual assertion shape - a flat map of byte strings
    /// holding both - read without building CBOR values (same bytes `decode` would give); nil for
    /// any other shape, including a flat map that lacks either field.
    private static func flatFields(_ object: [UInt8], decoder: CBORDecoder) -> (signature: [UInt8], authData: [UInt8])? {
        guard let entries = decoder.decodeFlatByteStringMap(object) else { return nil }
        func field(_ name: StaticString) -> [UInt8]? {
            let wanted = UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
            guard let entry = entries.first(where: { object[$0.key].elementsEqual(wanted) }) else { return nil }
            return Array(object[entry.value])
        }
        guard let signature = field("signature"), let authData = field("authenticatorData") else { return nil }
        return (signature, authData)
    }
}
