import AppAttest
import AttestCrypto
import GatewayConfig
import GatewayStore

/// Requests signed by a device key and the trust tiers (DESIGN.md section 8).
///
/// A device key (`POST {prefix}/register`) sends `App-Attest-Signature`: DER ECDSA P-256 / SHA-256
/// over the binding v1 client data the gateway rebuilt, checked with the stored point; the one-time
/// `assert` challenge is the replay guard, consumed by `AttestStore.commitSignedRequest` (one atomic
/// step, nothing changed on any refusal). A key whose tier is below the route's `min_tier` answers
/// `403 tier_too_low` on `enforce` routes before anything is consumed; `monitor` routes verify and
/// commit as usual and record the tier (reason `tier_too_low`). Next challenge: the signed-request
/// commit does not store one itself, so a known key's answer gets one from a second store command
/// (`withChallenge`), still no extra round trip for the client.
extension AssertionEnforcer {
    /// The refusal for the wrong kind of evidence for this key, or (enforce routes) a tier below
    /// `min_tier`; nil when the request may go on.
    /// - enforced: the request's refusal will be answered (enforce route, enforced cohort).
    func tierRefusal(key: CachedKey, route: CompiledRoute, deviceSignature: Bool, enforced: Bool) -> Refusal? {
        let names = family.configuration.evidence
        if key.isDeviceKey != deviceSignature {
            return .evidenceKindMismatch(deviceKey: key.isDeviceKey, assertionHeader: names.assertion,
                                         signatureHeader: names.signature)
        }
        if enforced, !key.passes(route.config.minTier) {
            return .tierTooLow(tier: key.tier.rawValue, required: route.config.minTier.rawValue)
        }
        return nil
    }

    /// Sets the tier facts of a valid request; below `min_tier` (monitor) the reason says so.
    func addTier(of key: CachedKey, route: CompiledRoute, to report: inout VerdictReport) {
        report.tier = key.tier.rawValue
        report.platformAttested = key.platformAttested
        report.integrity = key.integrity
        if !key.passes(route.config.minTier) { report.reason = "tier_too_low" }
    }

    /// Verifies a device key's signature over `clientData`, then commits the challenge.
    func verifySignatureAndCommit(key: CachedKey, keyId: KeyID, challenge: Challenge, signature: [UInt8],
                                  clientData: [UInt8], bodySHA256: [UInt8], route: CompiledRoute, shard: Int, enforced: Bool,
                                  completion: @escaping @Sendable (Decision) -> Void) {
        // The key is known: every answer from here on carries the next challenge (when on).
        let finish: @Sendable (Decision) -> Void = { [self] decision in
            withChallenge(decision, keyId: keyId, known: true, shard: shard, intoRefusal: false, completion: completion)
        }
        switch key.publicKey.verify(signature: signature, message: clientData) {
        case .valid: break
        case .invalid:
            finish(invalid(.verification(.badSignature, detail: "the signature does not verify with the device key over the client data"),
                           keyId: keyId))
            return
        case .malformedEncoding:
            finish(invalid(.verification(.signatureEncoding, detail: "the signature is not a strict DER ECDSA signature"),
                           keyId: keyId))
            return
        }
        store.commitSignedRequest(keyId: keyId, challenge: challenge, now: clock.now()) { [self] result in
            switch result {
            case .failure:
                completion(unavailable(route: route, keyId: keyId))
            case .success(.accepted):
                var report = VerdictReport(.valid, keyId: keyId)
                report.keyIdBase64 = key.keyIdBase64
                report.environment = key.platformAttested ? key.environment.rawValue : nil
                addTier(of: key, route: route, to: &report)
                report.appId = key.app.appId
                report.bodySHA256 = bodySHA256
                finish(Decision(report: report, refusal: nil))
            case .success(.refused(let refusal)):
                if refusal.keyIsGone { keys.remove(keyId) }
                let answer = invalid(.store(refusal), keyId: keyId)
                let challengeProblem = refusal == .challengeUnknown || refusal == .challengeExpired
                    || refusal == .challengeWrongPurpose
                // Unknown, revoked and expired keys get no next challenge; a challenge refusal of an
                // enforced request carries a fresh one in its body (the same value as the next one).
                guard refusal != .keyUnknown, refusal != .keyRevoked, refusal != .keyExpired else { return completion(answer) }
                withChallenge(answer, keyId: keyId, known: true, shard: shard, intoRefusal: challengeProblem && enforced,
                              completion: completion)
            }
        }
    }
}
