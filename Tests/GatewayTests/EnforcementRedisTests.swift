import Foundation
import XCTest

/// Assertion enforcement end to end with a real redis-server (AOF on), the Python upstream, curl and
/// python3 raw sockets as clients and ../shared/tools/ref_device.py as the device.
final class EnforcementRedisTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }

    func testValidRequestIsForwardedByteIdenticalWithVerdictHeaders() throws { try scenarioValidRequestForwarded(.ref) }
    func testReplayedAssertionIsRefusedAndChangesNothing() throws { try scenarioReplayRefused(.ref) }
    func testSameAssertionOnTwoConnectionsAtOnceIsAcceptedOnce() throws { try scenarioConcurrentDuplicateAcceptedOnce(.ref) }
    func testOutOfOrderCountersInsideWindowAreAcceptedOnceEach() throws { try scenarioWindowAcceptsOutOfOrder(.ref) }
    func testLowerCounterWithoutWindowIsRefused() throws { try scenarioNoWindowRefusesLowerCounter(.ref) }
    func testChangedBodyMethodPathOrQueryIsBadSignatureAndKeepsChallenge() throws { try scenarioChangedRequestRefused(.ref) }
    func testExpiredChallengeIsRefusedWithFreshChallenge() throws { try scenarioExpiredChallenge(.ref) }
    func testUsedChallengeIsRefused() throws { try scenarioUsedChallenge(.ref) }
    func testChallengeIssuedToAnotherKeyIsRefused() throws { try scenarioChallengeOfAnotherKey(.ref) }
    func testAttestChallengeOnAssertionIsWrongPurpose() throws { try scenarioWrongPurpose(.ref) }
    func testWrongChallengeValueDoesNotBurnPendingOne() throws { try scenarioWrongChallengeKeepsPending(.ref) }
    func testUnknownKeyIsKeyUnknownReattest() throws { try scenarioUnknownKey(.ref) }
    func testLowerCaseMethodIsRefusedOnEveryRoute() throws { try scenarioLowerCaseMethodRefused() }

    /// Monitor mode forwards what enforce would refuse, telling the upstream why.
    func testMonitorModeForwardsInvalidAndMissingWithVerdict() throws {
        let device = try env.attestedDevice(.ref)
        let signed = try env.signedRequest(device, target: "/v1/monitored/x", body: Array("signed".utf8), counter: 1)

        let tampered = try env.send(signed, body: Array("tampered".utf8))
        XCTAssertEqual(tampered.status, 200, "monitor forwards a failing request: \(tampered)")
        XCTAssertEqual(tampered.echo?.values("App-Attest-Verdict"), ["invalid"])
        XCTAssertEqual(tampered.echo?.values("App-Attest-Reason"), ["bad_signature"])
        XCTAssertEqual(tampered.echo?.values("App-Attest-Key-Id"), [], "no keyId unless valid")
        XCTAssertEqual(tampered.echo?.bodySHA256, sha256Hex(Array("tampered".utf8)))
        XCTAssertEqual(try env.storedCounter(device), 0, "an invalid request commits nothing")

        let bare = try env.send("POST", "/v1/monitored/y", body: Array("no evidence".utf8))
        XCTAssertEqual(bare.status, 200, "\(bare)")
        XCTAssertEqual(bare.echo?.values("App-Attest-Verdict"), ["missing"])
        XCTAssertEqual(bare.echo?.values("App-Attest-Reason"), ["assertion_missing"])

        let valid = try env.send(signed)
        XCTAssertEqual(valid.status, 200)
        XCTAssertEqual(valid.echo?.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(valid.echo?.values("App-Attest-Key-Id"), [device.keyId])
        XCTAssertEqual(valid.echo?.values("App-Attest-Counter"), ["1"])
        XCTAssertEqual(try env.storedCounter(device), 1, "monitor commits valid assertions like enforce")

        let replay = try env.send(signed)
        XCTAssertEqual(replay.status, 200)
        XCTAssertEqual(replay.echo?.values("App-Attest-Verdict"), ["invalid"])
        XCTAssertEqual(replay.echo?.values("App-Attest-Reason"), ["challenge_unknown"])
    }

    /// Enforce refuses a request without evidence (and does not forward it).
    func testMissingEvidenceIsRefusedOnEnforce() throws {
        let before = try env.upstream.requestCount()
        assertRefusal(try env.send("POST", "/v1/protected/x", body: Array("x".utf8)), status: 401, code: "assertion_missing",
                      action: "refresh_challenge")
        XCTAssertEqual(try env.upstream.requestCount(), before)
    }

    /// An evidence header sent twice is refused rather than guessed.
    func testDuplicatedEvidenceHeaderIsRefused() throws {
        let device = try env.attestedDevice(.ref)
        let signed = try env.signedRequest(device, target: "/v1/protected/d", counter: 1)
        let reply = try env.send(signed, extraHeaders: [("app-attest-challenge", signed.challenge)])
        assertRefusal(reply, status: 400, code: "header_duplicated")
        XCTAssertEqual(try env.send(signed).status, 200, "the refused attempt did not consume the challenge")
    }

    /// Evidence in URL-safe base64 without padding is accepted (DESIGN.md section 1, "Binary
    /// encoding"); the upstream gets the keyId in standard base64.
    func testBase64URLUnpaddedEvidenceIsAccepted() throws {
        let device = try env.attestedDevice(.ref)
        let signed = try env.signedRequest(device, target: "/v1/protected/url", body: Array("b64url".utf8), counter: 1)
        let headers = [("App-Attest-Key-Id", base64URL(signed.keyId)), ("App-Attest-Challenge", base64URL(signed.challenge)),
                       ("App-Attest-Assertion", base64URL(signed.assertion))]
        let reply = try env.send("POST", signed.target, headers: headers, body: signed.body)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        XCTAssertEqual(reply.echo?.values("App-Attest-Key-Id"), [device.keyId])
    }

    /// A diagnostic `App-Attest-Client-Data` copy must equal what the gateway rebuilds; a differing
    /// copy is refused without consuming the challenge, and the copy never reaches the upstream.
    func testClientDataCopyMustMatchTheRequest() throws {
        let device = try env.attestedDevice(.ref)
        let body = Array("copy".utf8)
        let signed = try env.signedRequest(device, target: "/v1/protected/copy?q=1", body: body, counter: 1)
        let challenge = Array(Data(base64Encoded: signed.challenge) ?? Data())
        func field(_ bytes: [UInt8]) -> [UInt8] {
            let n = UInt32(bytes.count)
            return [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + bytes
        }
        let bodyHash = Array(sha256Hex(body).chunked(2).map { UInt8($0, radix: 16) ?? 0 })
        let clientData = field(challenge) + field(Array("POST".utf8)) + field(Array("/v1/protected/copy?q=1".utf8)) + field(bodyHash)
        let wrong = field(challenge) + field(Array("POST".utf8)) + field(Array("/v1/protected/copy?q=2".utf8)) + field(bodyHash)

        assertRefusal(try env.send(signed, extraHeaders: [("App-Attest-Client-Data", Data(wrong).base64EncodedString())]),
                      status: 401, code: "client_data_mismatch")
        let reply = try env.send(signed, extraHeaders: [("App-Attest-Client-Data", Data(clientData).base64EncodedString())])
        XCTAssertEqual(reply.status, 200, "the copy matches the independently built client data v1: \(reply)")
        XCTAssertEqual(reply.echo?.values("App-Attest-Client-Data"), [])
    }

    /// A key record that disappeared from Redis (the gateway still has the key in its cache) is
    /// `key_unknown` / `reattest`, never accepted.
    func testKeyDeletedFromRedisIsKeyUnknown() throws {
        let device = try env.attestedDevice(.ref)
        let signed = try env.signedRequest(device, target: "/v1/protected/gone", counter: 1)
        XCTAssertEqual(try env.redis?.cli("DEL", "aa:{\(base64URL(device.keyId))}:key"), "1")
        let before = try env.upstream.requestCount()
        assertRefusal(try env.send(signed), status: 401, code: "key_unknown", action: "reattest")
        assertRefusal(try env.requestChallenge(keyId: device.keyId, purpose: "assert"), status: 401, code: "key_unknown",
                      action: "reattest")
        XCTAssertEqual(try env.upstream.requestCount(), before)
    }

    /// A revoked key (operator action in the store) is refused with 403 `key_revoked`.
    func testRevokedKeyIsRefused() throws {
        let device = try env.attestedDevice(.ref)
        XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/r", counter: 1)).status, 200)
        let signed = try env.signedRequest(device, target: "/v1/protected/r", counter: 2)
        XCTAssertEqual(try env.redis?.cli("HSET", "aa:{\(base64URL(device.keyId))}:key", "status", "revoked"), "0")
        assertRefusal(try env.send(signed), status: 403, code: "key_revoked", action: "deny")
        XCTAssertEqual(try env.redisKeyHash(device)["ctr"], "1")
    }
}

/// The same flows on the embedded memory store: the same answers are expected.
final class EnforcementMemoryStoreTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }

    func testValidRequestIsForwardedByteIdenticalWithVerdictHeaders() throws { try scenarioValidRequestForwarded(.ref) }
    func testReplayedAssertionIsRefusedAndChangesNothing() throws { try scenarioReplayRefused(.ref) }
    func testSameAssertionOnTwoConnectionsAtOnceIsAcceptedOnce() throws { try scenarioConcurrentDuplicateAcceptedOnce(.ref) }
    func testOutOfOrderCountersInsideWindowAreAcceptedOnceEach() throws { try scenarioWindowAcceptsOutOfOrder(.ref) }
    func testLowerCounterWithoutWindowIsRefused() throws { try scenarioNoWindowRefusesLowerCounter(.ref) }
    func testChangedBodyMethodPathOrQueryIsBadSignatureAndKeepsChallenge() throws { try scenarioChangedRequestRefused(.ref) }
    func testExpiredChallengeIsRefusedWithFreshChallenge() throws { try scenarioExpiredChallenge(.ref) }
    func testChallengeIssuedToAnotherKeyIsRefused() throws { try scenarioChallengeOfAnotherKey(.ref) }
    func testAttestChallengeOnAssertionIsWrongPurpose() throws { try scenarioWrongPurpose(.ref) }
    func testWrongChallengeValueDoesNotBurnPendingOne() throws { try scenarioWrongChallengeKeepsPending(.ref) }
    func testUnknownKeyIsKeyUnknownReattest() throws { try scenarioUnknownKey(.ref) }
}
