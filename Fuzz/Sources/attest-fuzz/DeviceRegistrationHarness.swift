import AppAttest
import AttestCrypto
import GatewayRules

/// `device-registration`: `DeviceKeyRegistrationVerifier.verify` (`POST {prefix}/register`, DESIGN.md
/// section 8), Apple's roots plus the Fuzz/testca root pinned. Framed input
/// (`DeviceRegistrationHarness.frame`): `options(1) now(8, BE seconds) publicKey challenge signature
/// backing integrity appAttestKeyId heldKey` (each a short field: one length byte, then the bytes;
/// integrity is the codes joined by `,`) then the App Attest object (the rest); options bits 0-1: 0
/// no `appAttest`, 1 attestation, 2 assertion (held key: the `heldKey` point, or the P-256 generator
/// when it does not parse; app `CommittedSeeds.appId`), 3 assertion without a held key.
///
/// Invariants: on acceptance, re-derived here: the public key is a 65-byte point that parses, the
/// backing is one of the two, the integrity codes have the `IntegrityCodes` shape, the device key's
/// signature verifies over the registration client data rebuilt independently (framed
/// `register-v1`, challenge, key, backing, codes), keyId = SHA-256(key), platformAttested iff App
/// Attest evidence was sent, platformTokenSpent iff it was an attestation (then appId and
/// environment come from it). On refusal: a reason; a spent attestation only on the attestation
/// variant.
enum DeviceRegistrationHarness {
    static let harness = Harness(name: "device-registration",
                                 summary: "DeviceKeyRegistrationVerifier.verify (framed: options, now, key, challenge, signature, backing, integrity, appAttest keyId, object)") { run($0) }

    static func frame(variant: UInt8, now: Int64, publicKey: [UInt8], challenge: [UInt8], signature: [UInt8], backing: String,
                      integrity: [String], appAttestKeyId: [UInt8], heldKey: [UInt8] = [], object: [UInt8]) -> [UInt8] {
        [variant] + FuzzFrame.i64(now) + FuzzFrame.shortField(publicKey) + FuzzFrame.shortField(challenge) + FuzzFrame.shortField(signature)
            + FuzzFrame.shortField(Array(backing.utf8)) + FuzzFrame.shortField(Array(integrity.joined(separator: ",").utf8))
            + FuzzFrame.shortField(appAttestKeyId) + FuzzFrame.shortField(heldKey) + object
    }

    static let verifier = DeviceKeyRegistrationVerifier(
        attestations: AttestationVerifier(trust: FuzzTrust.attestation, apps: [AppPolicy(appId: CommittedSeeds.appId, environment: .any)]))
    static let heldApp = AppPolicy(appId: CommittedSeeds.appId, environment: .any)

    static func run(_ input: [UInt8]) {
        let h = "device-registration"
        var reader = FuzzInput(input)
        let variant = reader.u8() & 3
        let now = reader.i64()
        let publicKey = reader.shortField()
        let challenge = reader.shortField()
        let signature = reader.shortField()
        let backing = String(decoding: reader.shortField(), as: UTF8.self)
        let joined = String(decoding: reader.shortField(), as: UTF8.self)
        let integrity = joined.isEmpty ? [] : joined.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        let appKeyId = reader.shortField()
        let heldPoint = reader.shortField()
        let object = reader.rest()
        let heldKey = DeviceKeyRegistrationVerifier.HeldKey(publicKey: (try? P256PublicKey(x963: heldPoint)) ?? AssertionHarness.generator,
                                                            app: heldApp, environment: .production)
        let appAttest: DeviceKeyRegistration.AppAttestEvidence?
        switch variant {
        case 1: appAttest = .attestation(keyId: appKeyId, object: object)
        case 2, 3: appAttest = .assertion(keyId: appKeyId, object: object)
        default: appAttest = nil
        }
        let registration = DeviceKeyRegistration(publicKey: publicKey, challenge: challenge, signature: signature, backing: backing,
                                                 integrity: integrity, appAttest: appAttest)
        let decision = verifier.verify(registration, now: now, heldKey: variant == 2 ? heldKey : nil)
        switch decision {
        case .rejected(let reason, _, let spent):
            Verbose.note(h, "rejected \(reason.rawValue)")
            Invariant.check(!spent || variant == 1, h, "a spent attestation without an attestation")
        case .accepted(let key):
            Verbose.note(h, "accepted")
            guard publicKey.count == 65, let parsed = try? P256PublicKey(x963: publicKey) else { Invariant.fail(h, "accepted key does not parse") }
            Invariant.check(DeviceKeyBacking(rawValue: backing) == key.backing, h, "backing differs")
            Invariant.check(IntegrityCodes.problem(integrity) == nil && key.integrity == integrity, h, "integrity codes accepted out of shape")
            var clientData: [UInt8] = []
            for field in [Array("register-v1".utf8), challenge, publicKey, Array(backing.utf8), Array(joined.utf8)] {
                let n = field.count
                clientData += [UInt8(n >> 24 & 0xFF), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + field
            }
            Invariant.check(parsed.verify(signature: signature, message: clientData) == .valid, h, "device signature does not verify")
            Invariant.check(key.keyId == SHA256.hash(publicKey), h, "kid is not SHA-256 of the key")
            Invariant.check(key.platformAttested == (variant == 1 || variant == 2), h, "platformAttested differs from the evidence")
            Invariant.check(key.platformTokenSpent == (variant == 1), h, "platformTokenSpent differs from the evidence")
            Invariant.check(variant != 3, h, "an assertion accepted without a held key")
            if variant == 1 { Invariant.check(key.appId == CommittedSeeds.appId && key.environment != nil, h, "attested app or environment missing") }
        }
    }
}
