import Foundation
import XCTest

/// `POST /app-attest/v1/attest` end to end with Redis: the key record as stored, re-attestation,
/// the verifier's refusals (app, environment, untrusted CA) and challenge handling - failing
/// attestations never consume the challenge.
final class AttestationEndpointTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }

    func testValidAttestationIs201AndStoresTheKey() throws {
        let device = try env.makeDevice(.ref)
        let challenge = try env.challenge(for: device, purpose: "attest")
        XCTAssertEqual(try env.redisKeys(device).count, 1, "the pending challenge")
        let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                 caDirectory: device.caDirectory)
        let reply = try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation)
        XCTAssertEqual(reply.status, 201, "\(reply)")
        XCTAssertEqual(reply.json["keyId"] as? String, device.keyId)
        XCTAssertEqual(reply.json["appId"] as? String, E2EEnvironment.appId)
        XCTAssertEqual(reply.json["environment"] as? String, "development")

        let hash = try env.redisKeyHash(device)
        XCTAssertEqual(hash["app"], E2EEnvironment.appId)
        XCTAssertEqual(hash["env"], "development")
        XCTAssertEqual(hash["ctr"], "0")
        XCTAssertEqual(hash["status"], "active")
        XCTAssertNotNil(hash["pk"])
        XCTAssertNotNil(hash["created"].flatMap { Int64($0) })
        // The attest challenge was consumed; the answer's next challenge (an assert one) is pending.
        let next = try XCTUnwrap(reply.header("App-Attest-Next-Challenge"), "\(reply)")
        XCTAssertEqual(try env.redisKeys(device), ["aa:{\(base64URL(device.keyId))}:ch:\(base64URL(next))",
                                                   "aa:{\(base64URL(device.keyId))}:key"].sorted(), "the challenge was consumed")
        let record = try XCTUnwrap(try env.storedKey(device))
        XCTAssertEqual(record.appId, E2EEnvironment.appId)
        XCTAssertEqual(record.publicKey.count, 65)

        // The same challenge cannot be used again.
        let again = try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation)
        assertChallengeRefusal(again, code: "challenge_unknown", notBefore: env.clock.now() / 1000)
    }

    func testReattestingAnExistingKeyIs409AndKeepsItsCounter() throws {
        let device = try env.attestedDevice(.ref)
        for counter: UInt32 in 1...2 {
            XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/r", counter: counter)).status, 200)
        }
        let pkBefore = try env.redisKeyHash(device)["pk"]
        let challenge = try env.challenge(for: device, purpose: "attest")
        let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                 caDirectory: device.caDirectory)
        assertRefusal(try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation), status: 409,
                      code: "key_exists")
        let hash = try env.redisKeyHash(device)
        XCTAssertEqual(hash["ctr"], "2", "re-attesting never resets the counter")
        XCTAssertEqual(hash["pk"], pkBefore)
        // Assertions go on from the stored counter.
        assertRefusal(try env.send(try env.signedRequest(device, target: "/v1/protected/r", counter: 1)), status: 401,
                      code: "counter_replay")
        XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/r", counter: 3)).status, 200)
    }

    func testWrongAppIdIsRpIdMismatchAndKeepsTheChallenge() throws {
        try assertRefusedThenAccepted(appId: E2EEnvironment.unknownAppId, environment: "development", ca: nil,
                                      status: 401, code: "rp_id_mismatch")
    }

    func testWrongEnvironmentIsEnvMismatchAndKeepsTheChallenge() throws {
        // The app accepts development keys only.
        try assertRefusedThenAccepted(appId: E2EEnvironment.appId, environment: "production", ca: nil,
                                      status: 403, code: "env_mismatch")
    }

    func testUntrustedCAIsChainInvalidAndKeepsTheChallenge() throws {
        let untrusted = try XCTUnwrap(env.cas.untrusted)
        try assertRefusedThenAccepted(appId: E2EEnvironment.appId, environment: "development", ca: untrusted,
                                      status: 401, code: "chain_invalid")
    }

    func testAttestationOverAnotherChallengeIsRefusedAndKeepsTheChallenge() throws {
        // Minted over a challenge the gateway never issued but sent with the issued one: the nonce
        // does not match.
        let device = try env.makeDevice(.ref)
        let challenge = try env.challenge(for: device, purpose: "attest")
        let foreign = try device.attestation(challenge: unissuedChallenge(), appId: E2EEnvironment.appId,
                                             environment: "development", caDirectory: device.caDirectory)
        assertRefusal(try env.attest(keyId: device.keyId, challenge: challenge, attestation: foreign), status: 401,
                      code: "nonce_mismatch")
        // Sent with its own, unissued challenge: verified, then refused by the store.
        let unissued = unissuedChallenge()
        let selfConsistent = try device.attestation(challenge: unissued, appId: E2EEnvironment.appId,
                                                    environment: "development", caDirectory: device.caDirectory)
        assertChallengeRefusal(try env.attest(keyId: device.keyId, challenge: unissued, attestation: selfConsistent),
                               code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        XCTAssertNil(try env.storedKey(device))
        let good = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                          caDirectory: device.caDirectory)
        XCTAssertEqual(try env.attest(keyId: device.keyId, challenge: challenge, attestation: good).status, 201)
    }

    func testExpiredAttestChallengeIsRefusedWithFreshChallenge() throws {
        let device = try env.makeDevice(.ref)
        let challenge = try env.challenge(for: device, purpose: "attest")
        let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                 caDirectory: device.caDirectory)
        env.clock.advance(seconds: 301)
        let fresh = assertChallengeRefusal(try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation),
                                           code: "challenge_expired", notBefore: env.clock.now() / 1000)
        XCTAssertNil(try env.storedKey(device))
        let retried = try device.attestation(challenge: try XCTUnwrap(fresh), appId: E2EEnvironment.appId,
                                             environment: "development", caDirectory: device.caDirectory)
        XCTAssertEqual(try env.attest(keyId: device.keyId, challenge: try XCTUnwrap(fresh), attestation: retried).status, 201,
                       "the fresh challenge is an attest challenge")
    }

    func testAssertChallengeUsedForAttestationIsWrongPurpose() throws {
        // An assert challenge is only issued for an attested key; its use on the attest endpoint is
        // refused for the purpose before key_exists is considered.
        let device = try env.attestedDevice(.ref)
        let challenge = try env.challenge(for: device, purpose: "assert")
        let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                 caDirectory: device.caDirectory)
        assertChallengeRefusal(try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation),
                               code: "challenge_wrong_purpose", notBefore: env.clock.now() / 1000)
        XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/p", counter: 1, challenge: challenge)).status,
                       200, "the assert challenge was not consumed by the attestation attempt")
    }

    func testMalformedAttestRequestsAre400() throws {
        let device = try env.makeDevice(.ref)
        assertRefusal(try env.send("POST", "/app-attest/v1/attest", body: Array("not json".utf8)), status: 400, code: "json_invalid")
        assertRefusal(try env.requestChallenge(keyId: "AAAA", purpose: "attest"), status: 400, code: "key_id_invalid")
        assertRefusal(try env.requestChallenge(keyId: device.keyId, purpose: "other"), status: 400, code: "json_invalid")
        // A repeated member (JSONSerialization would keep the last one), also spelled with an escape.
        for body in ["{\"keyId\":\"\(device.keyId)\",\"keyId\":\"\(device.keyId)\",\"purpose\":\"attest\"}",
                     "{\"keyId\":\"\(device.keyId)\",\"purpose\":\"assert\",\"purpos\\u0065\":\"attest\"}"] {
            assertRefusal(try env.send("POST", "/app-attest/v1/challenge", body: Array(body.utf8)), status: 400, code: "json_invalid")
        }
        XCTAssertEqual(try env.send("POST", "/app-attest/v1/challenge",
                                    body: Array("{\"keyId\":\"\(device.keyId)\",\"purpose\":\"attest\"}".utf8)).status, 201)
        let challenge = try env.challenge(for: device, purpose: "attest")
        assertRefusal(try env.attest(keyId: device.keyId, challenge: challenge, attestation: "AAAA"), status: 401,
                      code: "cbor_malformed")
        assertRefusal(try env.send("GET", "/app-attest/v1/attest"), status: 405, code: "method_not_allowed")
        let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                 caDirectory: device.caDirectory)
        XCTAssertEqual(try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation).status, 201)
    }

    /// A refused attestation (status, code) leaves the challenge pending: the right attestation over
    /// the same challenge is then accepted.
    private func assertRefusedThenAccepted(appId: String, environment: String, ca: URL?, status: Int, code: String,
                                           file: StaticString = #filePath, line: UInt = #line) throws {
        let device = try env.makeDevice(.ref)
        let challenge = try env.challenge(for: device, purpose: "attest", file: file, line: line)
        let bad = try device.attestation(challenge: challenge, appId: appId, environment: environment,
                                         caDirectory: ca ?? device.caDirectory)
        assertRefusal(try env.attest(keyId: device.keyId, challenge: challenge, attestation: bad), status: status, code: code,
                      file: file, line: line)
        XCTAssertNil(try env.storedKey(device), "nothing stored", file: file, line: line)
        XCTAssertEqual(try env.redisKeys(device), ["aa:{\(base64URL(device.keyId))}:ch:\(base64URL(challenge))"],
                       "the challenge is still pending", file: file, line: line)
        let good = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                          caDirectory: device.caDirectory)
        let reply = try env.attest(keyId: device.keyId, challenge: challenge, attestation: good)
        XCTAssertEqual(reply.status, 201, "the same challenge still works: \(reply)", file: file, line: line)
    }
}
