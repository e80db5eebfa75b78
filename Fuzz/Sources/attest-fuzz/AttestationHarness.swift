import AppAttest
import AttestCrypto
import GatewayRules

/// `attestation`: `AttestationVerifier.verify` on a whole attestation object, Apple's roots plus the
/// Fuzz/testca root pinned. Framed input (`AttestationHarness.frame`):
/// `options(1) now(8, BE seconds) keyId(32) clientDataHashLength(1) clientDataHash appIdLength(1)
/// appId attestationObject...`; options bits 0-1: environment policy (0 development, 1 production,
/// 2-3 any).
///
/// Invariants on acceptance, re-derived here from the object: the CBOR is a map with
/// `fmt == "apple-appattest"` and two x5c certificates; the leaf key hashes to keyId and equals the
/// attested key; the leaf's nonce extension is exactly `30 24 A1 22 04 20 || SHA256(authData ||
/// clientDataHash)`; authenticatorData has rpIdHash = SHA256(appId), counter 0, an aaguid the policy
/// allows and credentialId = keyId; every gating trace entry passed (receipt entries are risk signals). On refusal: a reason, and
/// `cbor_malformed` only when the bytes really are not one CBOR item.
enum AttestationHarness {
    static let harness = Harness(name: "attestation", summary: "AttestationVerifier.verify (framed: options, now, keyId, clientDataHash, appId, object)") { run($0) }

    static func frame(policy: UInt8, now: Int64, keyId: [UInt8], clientDataHash: [UInt8], appId: String, object: [UInt8]) -> [UInt8] {
        [policy] + FuzzFrame.i64(now) + (keyId + [UInt8](repeating: 0, count: 32)).prefix(32) + FuzzFrame.shortField(clientDataHash)
            + FuzzFrame.shortField(Array(appId.utf8)) + object
    }

    static func run(_ input: [UInt8]) {
        let h = "attestation"
        var reader = FuzzInput(input)
        let options = reader.u8()
        let policy: EnvironmentPolicy = options & 3 == 0 ? .development : options & 3 == 1 ? .production : .any
        let now = reader.i64()
        let keyId = reader.take(32)
        let clientDataHash = reader.shortField()
        let appId = String(decoding: reader.shortField(), as: UTF8.self)
        let object = reader.rest()
        let verifier = AttestationVerifier(trust: FuzzTrust.attestation, apps: [AppPolicy(appId: appId, environment: policy)])
        let decision = verifier.verify(attestationObject: object, keyId: keyId, clientDataHash: clientDataHash, now: now)
        Verbose.note(h, decision.isAccepted ? "accepted" : "rejected \(decision.reason?.rawValue ?? "") \(decision.detail)")

        guard case .accepted(let key, let trace) = decision else {
            Invariant.check(decision.reason != nil, h, "rejected without a reason")
            if decision.reason == .cborMalformed {
                Invariant.check((try? CBORDecoder().decode(object)) == nil, h, "cbor_malformed for a well-formed object")
            }
            return
        }
        let gates: [VerificationCheck] = [.cborDecodes, .fmt, .chain, .nonce, .keyId, .rpIdHash, .counterZero, .aaguid, .credentialId, .coseKeyMatchesLeaf]
        for gate in gates { Invariant.check(trace[gate] == true, h, "accepted although \(gate.rawValue) did not pass") }
        Invariant.check(keyId.count == 32 && key.keyId == keyId && SHA256.hash(key.publicKeyPoint) == keyId, h, "attested key does not hash to keyId")
        Invariant.check(key.appId == appId && key.counter == 0 && key.attestedAt == now, h, "attested key fields differ from the inputs")
        guard let parsed = try? AttestationObject(object) else { Invariant.fail(h, "accepted object does not parse") }
        Invariant.check(parsed.fmt == "apple-appattest" && parsed.x5c.count == 2, h, "accepted with fmt \(parsed.fmt) / \(parsed.x5c.count) certificates")
        guard let leaf = try? X509Certificate(der: parsed.x5c[0]) else { Invariant.fail(h, "accepted leaf does not parse") }
        Invariant.check(leaf.publicKeyPoint == key.publicKeyPoint, h, "attested key is not the leaf key")
        let nonceValue = leaf.extensions.filter { $0.oid == "1.2.840.113635.100.8.2" }
        let expected: [UInt8] = [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + SHA256.hash(parsed.authData, clientDataHash)
        Invariant.check(nonceValue.count == 1 && nonceValue[0].value == expected, h, "nonce extension is not the canonical SHA256(authData || clientDataHash)")
        let a = parsed.authData
        Invariant.check(a.count >= 55 + 32, h, "authData too short")
        Invariant.check(Array(a[0..<32]) == SHA256.hash(utf8: appId), h, "rpIdHash is not SHA256(appId)")
        Invariant.check(a[32] & 0x40 != 0 && a[33..<37].allSatisfy { $0 == 0 }, h, "AT clear or counter not zero")
        let aaguid = Array(a[37..<53])
        let development = Array("appattestdevelop".utf8), production = Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        let allowed = (policy != .production && aaguid == development) || (policy != .development && aaguid == production)
        Invariant.check(allowed && key.environment.aaguid == aaguid, h, "aaguid not allowed by the policy")
        Invariant.check(Int(a[53]) << 8 | Int(a[54]) == 32 && Array(a[55..<87]) == keyId, h, "credentialId is not keyId")
    }
}
