import AppAttest
import AttestCrypto
import Foundation
import GatewayRules

/// Runs the verifier on test vectors and reports per-check results under the vectors' check names.
struct VectorEvaluator {
    /// Trust anchors for attestation chains and receipts.
    let trust: TrustAnchors
    /// When set, verify chains at this time instead of each vector's validationTime.
    let fixedTime: Int64?

    /// The result of one vector or variant.
    struct Outcome {
        var accepted: Bool
        var reason: String?
        var checks: [(String, Bool)]
        var detail: String = ""

        func check(_ name: String) -> Bool? { checks.first { $0.0 == name }?.1 }

        /// Every expected check equals ours (a missing check counts as a mismatch).
        func matches(_ expected: [String: Bool]) -> Bool {
            expected.allSatisfy { check($0.key) == $0.value }
        }
    }

    func evaluate(_ vector: TestVector) throws -> Outcome {
        switch vector.kind {
        case "attestation": return try attestation(vector)
        case "assertion": return try assertion(vector)
        case "receipt": return try receipt(vector)
        default: throw VectorError("\(vector.id): unknown kind \(vector.kind)")
        }
    }

    /// The vector's app; its `environment` (`development` or `production`) restricts the keys accepted,
    /// any other value or none accepts both.
    private func appPolicy(_ vector: TestVector) -> AppPolicy {
        let environment = EnvironmentPolicy(rawValue: vector.string("environment") ?? "") ?? .any
        return AppPolicy(teamId: vector.string("teamId") ?? "", bundleId: vector.string("bundleId") ?? "", environment: environment)
    }

    private func attestation(_ vector: TestVector) throws -> Outcome {
        guard let object = try vector.bytes("attestationObject") else { throw VectorError("\(vector.id): no attestationObject") }
        let keyId = try vector.bytes("keyId") ?? []
        let clientDataHash = try vector.bytes("clientDataHash") ?? []
        let time: Int64
        if let fixedTime {
            time = fixedTime
        } else {
            guard let text = vector.string("validationTime"), let t = CivilTime.parseISO8601(text) else {
                throw VectorError("\(vector.id): no validationTime")
            }
            time = t
        }
        let verifier = AttestationVerifier(trust: trust, apps: [appPolicy(vector)])
        let decision = verifier.verify(attestationObject: object, keyId: keyId, clientDataHash: clientDataHash, now: time)
        return Outcome(accepted: decision.isAccepted, reason: decision.reason?.rawValue,
                       checks: decision.trace.entries.map { ($0.check.rawValue, $0.passed) }, detail: decision.detail)
    }

    private func assertion(_ vector: TestVector) throws -> Outcome {
        guard let object = try vector.bytes("assertion") else { throw VectorError("\(vector.id): no assertion") }
        let key: P256PublicKey
        if let point = try vector.bytes("publicKeyX963") {
            key = try P256PublicKey(x963: point)
        } else if let pem = vector.string("publicKeyPem") {
            key = try P256PublicKey(pem: pem)
        } else {
            throw VectorError("\(vector.id): no public key")
        }
        let clientData = try vector.bytes("clientData")
        guard let clientDataHash = try vector.bytes("clientDataHash") ?? clientData.map({ SHA256.hash($0) }) else {
            throw VectorError("\(vector.id): neither clientDataHash nor clientData")
        }
        let app = appPolicy(vector)
        let previous = vector.integer("previousCounter").flatMap { UInt32(exactly: $0) }
        let decision = AssertionVerifier.verify(assertionObject: object, publicKey: key, rpIdHash: app.rpIdHash,
                                                clientDataHash: clientDataHash, previousCounter: previous ?? 0)
        var checks = decision.trace.entries.map { ($0.check.rawValue, $0.passed) }
        var accepted = decision.isAccepted
        var reason = decision.reason?.rawValue
        // Vector-level checks (not verifier decisions): counter as expected, key vs keyId, hash of clientData.
        if let expectedCounter = vector.integer("expectedCounter") {
            let counter = Self.assertionCounter(object)
            let ok = counter.map { Int64($0) == expectedCounter } ?? false
            checks.append(("counter_matches_expected", ok))
            if !ok && accepted { accepted = false; reason = "counter_unexpected" }
        }
        if let keyId = try vector.bytes("keyId") {
            checks.append(("publicKey_matches_keyId", ConstantTime.equals(SHA256.hash(key.x963Representation), keyId)))
        }
        if let clientData {
            checks.append(("clientDataHash_is_sha256_of_clientData", ConstantTime.equals(SHA256.hash(clientData), clientDataHash)))
        }
        var outcome = Outcome(accepted: accepted, reason: reason, checks: checks)
        if case .rejected(_, let detail, _) = decision { outcome.detail = detail }
        return outcome
    }

    /// The counter of an assertion's authenticatorData, when it parses.
    static func assertionCounter(_ object: [UInt8]) -> UInt32? {
        guard let value = try? CBORDecoder().decode(object), let raw = value["authenticatorData"]?.bytesValue,
              let authData = try? AuthenticatorData(raw, kind: .assertion) else { return nil }
        return authData.counter
    }

    private func receipt(_ vector: TestVector) throws -> Outcome {
        guard let bytes = try vector.bytes("receipt") else { throw VectorError("\(vector.id): no receipt") }
        let result = ReceiptVerifier(trust: trust).verify(bytes)
        var checks: [(String, Bool)] = [("signature", result.signatureValid), ("signer_chain", result.signerChainValid)]
        var reason = result.failure?.rawValue
        if let team = vector.string("teamId"), let bundle = vector.string("bundleId") {
            let ok = result.receipt?.appId == team + "." + bundle
            checks.append(("app_id", ok))
            if !ok && reason == nil { reason = "receipt_app_id_mismatch" }
        }
        if let keyId = try vector.bytes("keyId") {
            let ok = ConstantTime.equals(result.receipt?.attestedKeyId ?? [], keyId)
            checks.append(("attested_key_matches_keyId", ok))
            if !ok && reason == nil { reason = "receipt_key_mismatch" }
        }
        if let type = vector.string("expectedType") {
            let ok = result.receipt?.type == type
            checks.append(("receipt_type", ok))
            if !ok && reason == nil { reason = "receipt_type_mismatch" }
        }
        return Outcome(accepted: reason == nil, reason: reason, checks: checks, detail: result.detail)
    }
}
