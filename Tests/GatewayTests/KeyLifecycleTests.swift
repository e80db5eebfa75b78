import Foundation
import GatewayTestSupport
import XCTest

/// Issue 10 "Lifecycle" end to end over real sockets against a real redis-server: `registration_ttl`
/// (expiresAt, renewAfter), `401 key_expired` / `reattest`, `POST /renew` and `POST /forget` for App
/// Attest keys (assertions minted by ref_device.py) and device keys (signatures by `openssl dgst`),
/// each refusal beside its passing case.
final class KeyLifecycleTests: XCTestCase {
    private var env: LifecycleGateway!

    override func setUpWithError() throws {
        guard E2EPaths.hasRefDevice else { throw XCTSkip(SharedFixtures.absentMessage) }
        env = try LifecycleGateway()
    }

    override func tearDown() {
        env?.stop()
        env = nil
        super.tearDown()
    }

    private func seconds(_ reply: HTTPReply, _ field: String) -> Int64? { (reply.json[field] as? NSNumber)?.int64Value }

    /// `/attest` answers expiresAt = now + TTL and renewAfter at two thirds of it; the record has the
    /// expiry. A protected request passes before the expiry and answers `401 key_expired` / `reattest`
    /// from the expiry on (the same key, the same kind of request: only the clock moved).
    func testAttestationExpiresAndExpiredKeyAnswersKeyExpired() throws {
        let before = env.clock.now() / 1000
        let device = try env.attestedRefDevice()
        let record = try XCTUnwrap(try env.record(device.keyId))
        let expiresAt = try XCTUnwrap(record.expiresAt)
        XCTAssertEqual(Double(expiresAt), Double((before + LifecycleGateway.ttlSeconds) * 1000), accuracy: 5_000)

        XCTAssertEqual(try env.protectedRequest(device, counter: 1).status, 200)
        env.clock.advance(seconds: LifecycleGateway.ttlSeconds - 60)
        XCTAssertEqual(try env.protectedRequest(device, counter: 2).status, 200, "one minute before the expiry")
        env.clock.advance(seconds: 61)
        let expired = try env.protectedRequest(device, counter: 3)
        XCTAssertEqual(expired.status, 401, "\(expired)")
        XCTAssertEqual(expired.errorCode, "key_expired")
        XCTAssertEqual(expired.action, "reattest")
        XCTAssertEqual(expired.header("App-Attest-Error"), "key_expired")
        // No renewal after the expiry: a new key must attest.
        let challenge = try env.challenge(keyId: device.keyId, purpose: "renew")
        let late = try env.lifecycleWithAssertion("renew", device, challenge: challenge, counter: 4)
        XCTAssertEqual(late.status, 401, "\(late)")
        XCTAssertEqual(late.errorCode, "key_expired")
        XCTAssertEqual(late.action, "reattest")
    }

    /// The attestation answer carries expiresAt and renewAfter (= expiresAt - TTL/3), unix seconds.
    func testAttestationAnswerCarriesRenewAfter() throws {
        guard let ca = env.cas.ref else { throw XCTSkip(SharedFixtures.absentMessage) }
        let device = try RefDevice(directory: env.work, caDirectory: ca)
        let challenge = try env.challenge(for: device, purpose: "attest")
        let attestation = try device.attestation(challenge: challenge, appId: LifecycleGateway.appId, environment: "development", caDirectory: ca)
        let now = env.clock.now() / 1000
        let reply = try env.post("attest", ["keyId": device.keyId, "challenge": challenge, "attestation": attestation])
        XCTAssertEqual(reply.status, 201, "\(reply)")
        let expiresAt = try XCTUnwrap(seconds(reply, "expiresAt"), "\(reply)")
        let renewAfter = try XCTUnwrap(seconds(reply, "renewAfter"), "\(reply)")
        XCTAssertEqual(Double(expiresAt), Double(now + LifecycleGateway.ttlSeconds), accuracy: 5)
        XCTAssertEqual(expiresAt - renewAfter, LifecycleGateway.ttlSeconds / 3, "renew once two thirds of the TTL passed")
    }

    /// An App Attest key renews with an assertion over renew-v1: the expiry moves to now + TTL and the
    /// key keeps working past its first expiry. Beside it: the replayed renewal, a challenge of the
    /// wrong purpose, a challenge of another key, an assertion over forget-v1 sent to /renew, a counter
    /// not above the stored one, the wrong kind of proof.
    func testAppAttestKeyRenewsAndBadRenewalsAreRefused() throws {
        let device = try env.attestedRefDevice()
        let other = try env.attestedRefDevice()
        XCTAssertEqual(try env.protectedRequest(device, counter: 1).status, 200)
        env.clock.advance(seconds: 3000)

        // Wrong purpose: an assert challenge.
        let assertChallenge = try env.challenge(keyId: device.keyId, purpose: "assert")
        let wrongPurpose = try env.lifecycleWithAssertion("renew", device, challenge: assertChallenge, counter: 2)
        XCTAssertEqual(wrongPurpose.status, 401, "\(wrongPurpose)")
        XCTAssertEqual(wrongPurpose.errorCode, "challenge_wrong_purpose")
        XCTAssertEqual(wrongPurpose.action, "refresh_challenge")
        XCTAssertNotNil(wrongPurpose.json["challenge"], "a fresh renew challenge comes with the refusal")
        // Another key's renew challenge.
        let foreign = try env.challenge(keyId: other.keyId, purpose: "renew")
        let foreignReply = try env.lifecycleWithAssertion("renew", device, challenge: foreign, counter: 2)
        XCTAssertEqual(foreignReply.status, 401, "\(foreignReply)")
        XCTAssertEqual(foreignReply.errorCode, "challenge_unknown")
        // An assertion over forget-v1 presented to /renew: the label is signed.
        let challenge = try env.challenge(keyId: device.keyId, purpose: "renew")
        let relabelled = try env.lifecycleWithAssertion("renew", device, challenge: challenge, counter: 2, label: "forget-v1")
        XCTAssertEqual(relabelled.status, 401, "\(relabelled)")
        XCTAssertEqual(relabelled.errorCode, "bad_signature")
        // Counter not above the stored one (1).
        let stale = try env.lifecycleWithAssertion("renew", device, challenge: challenge, counter: 1)
        XCTAssertEqual(stale.status, 401, "\(stale)")
        XCTAssertEqual(stale.errorCode, "counter_replay")
        // A device-key signature for an App Attest key.
        let mismatch = try env.post("renew", ["keyId": device.keyId, "challenge": challenge, "signature": "MEUCIQ=="])
        XCTAssertEqual(mismatch.status, 400, "\(mismatch)")
        XCTAssertEqual(mismatch.errorCode, "proof_mismatch")
        XCTAssertEqual(try env.record(device.keyId)?.counter, 1, "nothing changed by the refusals")

        // The good renewal (the challenge survived the refusals).
        let now = env.clock.now() / 1000
        let body = try JSONSerialization.data(withJSONObject: ["keyId": device.keyId, "challenge": challenge,
            "assertion": try env.assertion(device, clientData: LifecycleGateway.clientData(
                "renew-v1", challenge: Array(Data(base64Encoded: challenge)!), keyId: Array(Data(base64Encoded: device.keyId)!)), counter: 2)])
        let renewed = try env.send("POST", "/app-attest/v1/renew", headers: [("Content-Type", "application/json")], body: Array(body))
        XCTAssertEqual(renewed.status, 200, "\(renewed)")
        XCTAssertEqual(renewed.json["kid"] as? String, device.keyId)
        let expiresAt = try XCTUnwrap(seconds(renewed, "expiresAt"), "\(renewed)")
        XCTAssertEqual(Double(expiresAt), Double(now + LifecycleGateway.ttlSeconds), accuracy: 5)
        XCTAssertEqual(seconds(renewed, "renewAfter"), expiresAt - LifecycleGateway.ttlSeconds / 3)
        XCTAssertEqual(try env.record(device.keyId)?.counter, 2, "the renewal's assertion advanced the counter")
        // The replayed renewal: its counter is no longer above the stored one (the assertion is checked
        // before the store, which would also find the challenge spent).
        let replayed = try env.send("POST", "/app-attest/v1/renew", headers: [("Content-Type", "application/json")], body: Array(body))
        XCTAssertEqual(replayed.status, 401, "\(replayed)")
        XCTAssertEqual(replayed.errorCode, "counter_replay")
        XCTAssertEqual(try env.record(device.keyId)?.counter, 2)

        // Past the first expiry (3000 + 1000 s > 3600 s) the key still works; the other one does not.
        env.clock.advance(seconds: 1000)
        XCTAssertEqual(try env.protectedRequest(device, counter: 3).status, 200)
        XCTAssertEqual(try env.protectedRequest(other, counter: 1).errorCode, "key_expired")
    }

    /// A device key (record written straight into the store, tier `device`) renews and forgets with
    /// DER signatures made by `openssl dgst -sha256 -sign`; a signature by another key, an assertion
    /// instead of a signature, a revoked key and a forgotten key are refused.
    func testDeviceKeyRenewsAndForgetsWithOpenSSLSignatures() throws {
        let key = try env.makeDeviceKey()
        let stranger = try env.makeDeviceKey()
        try env.registerDeviceKey(key)
        env.clock.advance(seconds: 600)

        let challenge = try env.challenge(keyId: key.keyId, purpose: "renew")
        let forged = try env.lifecycleWithSignature("renew", key, challenge: challenge, signer: stranger)
        XCTAssertEqual(forged.status, 401, "\(forged)")
        XCTAssertEqual(forged.errorCode, "bad_signature")
        let wrongProof = try env.post("renew", ["keyId": key.keyId, "challenge": challenge, "assertion": "oA=="])
        XCTAssertEqual(wrongProof.status, 400, "\(wrongProof)")
        XCTAssertEqual(wrongProof.errorCode, "proof_mismatch")
        let both = try env.post("renew", ["keyId": key.keyId, "challenge": challenge, "assertion": "oA==", "signature": "MAA="])
        XCTAssertEqual(both.status, 400, "\(both)")
        let before = try XCTUnwrap(try env.record(key.keyId)?.expiresAt)

        let now = env.clock.now()
        let renewed = try env.lifecycleWithSignature("renew", key, challenge: challenge)
        XCTAssertEqual(renewed.status, 200, "\(renewed)")
        let after = try XCTUnwrap(try env.record(key.keyId)?.expiresAt)
        XCTAssertGreaterThan(after, before)
        XCTAssertEqual(Double(after), Double(now + LifecycleGateway.ttlSeconds * 1000), accuracy: 5_000)
        let replayed = try env.lifecycleWithSignature("renew", key, challenge: challenge)
        XCTAssertEqual(replayed.errorCode, "challenge_unknown", "\(replayed)")

        // Forget: a renew challenge is the wrong purpose; then the good one deletes the record.
        let renewChallenge = try env.challenge(keyId: key.keyId, purpose: "renew")
        let wrongPurpose = try env.lifecycleWithSignature("forget", key, challenge: renewChallenge)
        XCTAssertEqual(wrongPurpose.errorCode, "challenge_wrong_purpose", "\(wrongPurpose)")
        let forgetChallenge = try env.challenge(keyId: key.keyId, purpose: "forget")
        let forgotten = try env.lifecycleWithSignature("forget", key, challenge: forgetChallenge)
        XCTAssertEqual(forgotten.status, 200, "\(forgotten)")
        XCTAssertEqual(forgotten.json["forgotten"] as? Bool, true)
        XCTAssertNil(try env.record(key.keyId), "the record is gone")
        XCTAssertEqual(try env.redis.cli("EXISTS", "aa:{\(base64URL(key.keyId))}:key"), "0")

        // Renewal by the forgotten key (with the renew challenge issued before): key_unknown / reattest.
        let afterForget = try env.lifecycleWithSignature("renew", key, challenge: renewChallenge)
        XCTAssertEqual(afterForget.status, 401, "\(afterForget)")
        XCTAssertEqual(afterForget.errorCode, "key_unknown")
        XCTAssertEqual(afterForget.action, "reattest")
        let noChallenge = try env.requestChallenge(keyId: key.keyId, purpose: "renew")
        XCTAssertEqual(noChallenge.status, 401, "no renew challenge for a key the gateway does not hold: \(noChallenge)")
    }

    /// A revoked key can neither renew nor forget (its revocation stays on record); an unrevoked one
    /// beside it can.
    func testRevokedKeyCannotRenewOrForget() throws {
        let revoked = try env.makeDeviceKey()
        let kept = try env.makeDeviceKey()
        try env.registerDeviceKey(revoked)
        try env.registerDeviceKey(kept)
        let renewChallenge = try env.challenge(keyId: revoked.keyId, purpose: "renew")
        let forgetChallenge = try env.challenge(keyId: revoked.keyId, purpose: "forget")
        try env.revoke(revoked.keyId)
        let renew = try env.lifecycleWithSignature("renew", revoked, challenge: renewChallenge)
        XCTAssertEqual(renew.status, 403, "\(renew)")
        XCTAssertEqual(renew.errorCode, "key_revoked")
        let forget = try env.lifecycleWithSignature("forget", revoked, challenge: forgetChallenge)
        XCTAssertEqual(forget.status, 403, "\(forget)")
        XCTAssertEqual(forget.errorCode, "key_revoked")
        XCTAssertEqual(try env.record(revoked.keyId)?.status, .revoked, "still on record, revoked")

        let ok = try env.lifecycleWithSignature("renew", kept, challenge: try env.challenge(keyId: kept.keyId, purpose: "renew"))
        XCTAssertEqual(ok.status, 200, "\(ok)")
    }

    /// An App Attest key forgets itself with an assertion over forget-v1; the counter must advance.
    func testAppAttestKeyForgets() throws {
        let device = try env.attestedRefDevice()
        XCTAssertEqual(try env.protectedRequest(device, counter: 5).status, 200)
        let challenge = try env.challenge(keyId: device.keyId, purpose: "forget")
        let stale = try env.lifecycleWithAssertion("forget", device, challenge: challenge, counter: 5)
        XCTAssertEqual(stale.errorCode, "counter_replay", "\(stale)")
        XCTAssertNotNil(try env.record(device.keyId))
        let forgotten = try env.lifecycleWithAssertion("forget", device, challenge: challenge, counter: 6)
        XCTAssertEqual(forgotten.status, 200, "\(forgotten)")
        XCTAssertNil(try env.record(device.keyId))
        let after = try env.requestChallenge(keyId: device.keyId, purpose: "assert")
        XCTAssertEqual(after.status, 401, "\(after)")
        XCTAssertEqual(after.errorCode, "key_unknown", "a forgotten key must attest anew")
    }

    /// With the store down, renew and forget answer `503 store_unavailable` / `retry` (fail-closed),
    /// never a renewal; back up, the same key renews.
    func testStoreOutageAnswers503() throws {
        let key = try env.makeDeviceKey()
        try env.registerDeviceKey(key)
        let challenge = try env.challenge(keyId: key.keyId, purpose: "renew")
        let port = env.redis.port
        env.redis.stop()
        for action in ["renew", "forget"] {
            let reply = try env.lifecycleWithSignature(action, key, challenge: challenge)
            XCTAssertEqual(reply.status, 503, "\(action): \(reply)")
            XCTAssertEqual(reply.errorCode, "store_unavailable")
            XCTAssertEqual(reply.action, "retry")
            XCTAssertNotNil(reply.header("Retry-After"))
        }
        XCTAssertNotEqual(port, 0)
        // Back up (same port, same AOF): the gateway reconnects and the pending challenge renews.
        try env.redis.start()
        var last: HTTPReply?
        waitFor("the renewal after the store came back", timeout: 20) {
            last = try? env.lifecycleWithSignature("renew", key, challenge: challenge)
            return last?.status == 200
        }
        XCTAssertEqual(last?.status, 200, "\(String(describing: last))")
    }
}
