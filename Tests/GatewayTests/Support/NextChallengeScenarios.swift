import Foundation
import XCTest

/// The next challenge over real sockets (DESIGN.md section 9, issue 11 "One round trip"), shared by
/// the Redis, memory-store, HTTP/2 and switched-off classes of NextChallengeTests.swift. Every
/// scenario makes its own device keys with the simulator device.
extension E2ETestCase {
    /// The next challenge of an answer (header values), nil when it carries none; fails the test
    /// when only one of the two fields is there or a field appears twice.
    func nextChallenge(of reply: HTTPReply, file: StaticString = #filePath, line: UInt = #line) -> (challenge: String, expires: Int64)? {
        let challenges = reply.headers("App-Attest-Next-Challenge")
        let expiries = reply.headers("App-Attest-Next-Challenge-Expires")
        XCTAssertLessThanOrEqual(challenges.count, 1, "one copy at most: \(reply)", file: file, line: line)
        XCTAssertEqual(challenges.count, expiries.count, "both fields or neither: \(reply)", file: file, line: line)
        guard let challenge = challenges.first, let expires = expiries.first.flatMap({ Int64($0) }) else { return nil }
        return (challenge, expires)
    }

    /// Asserts that `reply` carries a next challenge that looks right (32 bytes of standard base64,
    /// expiry after now and within the 300s TTL) and returns it.
    @discardableResult
    func assertNextChallenge(_ reply: HTTPReply, _ what: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let next = try XCTUnwrap(nextChallenge(of: reply, file: file, line: line), "\(what): a next challenge: \(reply)",
                                 file: file, line: line)
        XCTAssertEqual(Data(base64Encoded: next.challenge)?.count, 32, "\(what): standard base64 of 32 bytes", file: file, line: line)
        let now = env.clock.now() / 1000
        XCTAssertGreaterThan(next.expires, now, "\(what): expires in the future", file: file, line: line)
        XCTAssertLessThanOrEqual(next.expires, now + 301, "\(what): within challenge_ttl", file: file, line: line)
        return next.challenge
    }

    /// Asserts that `reply` carries no next challenge.
    func assertNoNextChallenge(_ reply: HTTPReply, _ what: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(reply.headers("App-Attest-Next-Challenge"), [], "\(what): no next challenge: \(reply)", file: file, line: line)
        XCTAssertEqual(reply.headers("App-Attest-Next-Challenge-Expires"), [], "\(what): \(reply)", file: file, line: line)
    }

    /// Attests a new simulator device and returns it with the attestation answer.
    func attestWithAnswer() throws -> (device: ClientDevice, reply: HTTPReply) {
        let device = try env.makeDevice(.sim)
        let challenge = try env.challenge(for: device, purpose: "attest")
        let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                 caDirectory: device.caDirectory)
        let reply = try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation)
        XCTAssertEqual(reply.status, 201, "\(reply)")
        return (device, reply)
    }

    /// Redis' hash of a pending challenge (`aa:{keyId}:ch:<challenge>`), empty when absent.
    func redisChallenge(_ device: ClientDevice, _ challenge: String) throws -> [String: String] {
        guard let redis = env.redis else { return [:] }
        let out = try redis.cli("HGETALL", "aa:{\(base64URL(device.keyId))}:ch:\(base64URL(challenge))")
        let lines = out.split(separator: "\n").map(String.init)
        var hash: [String: String] = [:]
        var i = 0
        while i + 1 < lines.count {
            hash[lines[i]] = lines[i + 1]
            i += 2
        }
        return hash
    }

    /// Steady state: the attestation answer's challenge signs the first request, every answer's next
    /// challenge signs the following one; no `/challenge` call after the attestation. Each next
    /// challenge is a new value, stored as an `assert` challenge of this key, and single-use.
    func scenarioChainOfRequests() throws {
        let (device, attested) = try attestWithAnswer()
        var challenge = try assertNextChallenge(attested, "attestation answer")
        var seen: Set<String> = [challenge]
        var previous: SignedRequest?
        for counter in 1...4 as ClosedRange<UInt32> {
            if env.storeKind == .redis {
                let stored = try redisChallenge(device, challenge)
                XCTAssertEqual(stored["p"], "assert", "request \(counter): stored as an assert challenge: \(stored)")
                let expiresMillis = Int64(stored["exp"] ?? "") ?? 0
                XCTAssertGreaterThan(expiresMillis, env.clock.now(), "request \(counter): stored expiry")
            }
            let signed = try env.signedRequest(device, target: "/v1/protected/chain/\(counter)", body: Array("n=\(counter)".utf8),
                                               counter: counter, challenge: challenge)
            let reply = try env.send(signed)
            XCTAssertEqual(reply.status, 200, "request \(counter) signed with the previous answer's challenge: \(reply)")
            XCTAssertEqual(reply.echo?.values("App-Attest-Counter"), ["\(counter)"])
            XCTAssertEqual(reply.echo?.values("App-Attest-Next-Challenge"), [], "the upstream never sees it")
            challenge = try assertNextChallenge(reply, "answer \(counter)")
            XCTAssertFalse(seen.contains(challenge), "answer \(counter): a new value each time")
            seen.insert(challenge)
            previous = signed
        }
        XCTAssertEqual(try env.storedCounter(device), 4)

        // Single use: the last request again is refused, its challenge spent; the refusal carries a
        // next challenge (the same value as the fresh one in the body), which works.
        let replayed = try env.send(XCTUnwrap(previous))
        let fresh = assertChallengeRefusal(replayed, code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        let next = try assertNextChallenge(replayed, "challenge_unknown refusal")
        XCTAssertEqual(fresh, next, "the body's fresh challenge is the next challenge")
        // The unused next challenge of the last answer still works as well (it stays pending).
        let pendingUse = try env.signedRequest(device, target: "/v1/protected/chain/5", counter: 5, challenge: challenge)
        XCTAssertEqual(try env.send(pendingUse).status, 200)
        let retried = try env.signedRequest(device, target: "/v1/protected/chain/6", counter: 6, challenge: next)
        XCTAssertEqual(try env.send(retried).status, 200)
    }

    /// The next challenge belongs to its key and is an `assert` challenge: another key cannot spend
    /// it, an attestation cannot use it.
    func scenarioNextChallengeBoundToKeyAndPurpose() throws {
        let owner = try env.attestedDevice(.sim)
        let other = try env.attestedDevice(.sim)
        let first = try env.send(try env.signedRequest(owner, target: "/v1/protected/own", counter: 1))
        XCTAssertEqual(first.status, 200, "\(first)")
        let next = try assertNextChallenge(first, "owner's answer")

        let stolen = try env.signedRequest(other, target: "/v1/protected/theft", counter: 1, challenge: next)
        let refused = try env.send(stolen)
        assertChallengeRefusal(refused, code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        let othersNext = try assertNextChallenge(refused, "the other key's refusal")
        XCTAssertNotEqual(othersNext, next)

        let attestation = try owner.attestation(challenge: next, appId: E2EEnvironment.appId, environment: "development",
                                                caDirectory: owner.caDirectory)
        assertRefusal(try env.attest(keyId: owner.keyId, challenge: next, attestation: attestation), status: 401,
                      code: "challenge_wrong_purpose")

        let own = try env.send(try env.signedRequest(owner, target: "/v1/protected/own", counter: 2, challenge: next))
        XCTAssertEqual(own.status, 200, "neither attempt burnt it: \(own)")
        let othersOwn = try env.send(try env.signedRequest(other, target: "/v1/protected/own", counter: 1, challenge: othersNext))
        XCTAssertEqual(othersOwn.status, 200, "the other key's refusal gave it a usable challenge: \(othersOwn)")
    }

    /// Refusals to a request naming a known key carry a next challenge (bad signature, counter
    /// replay, missing assertion or challenge; a missing challenge also puts it in the body); an
    /// unknown key, a revoked key and a request without keyId get none.
    func scenarioRefusalsCarryNextChallenge() throws {
        let device = try env.attestedDevice(.sim)
        let signed = try env.signedRequest(device, target: "/v1/protected/r", body: Array("ok".utf8), counter: 1)
        let tampered = try env.send(signed, body: Array("tampered".utf8))
        assertRefusal(tampered, status: 401, code: "bad_signature")
        let afterBadSignature = try assertNextChallenge(tampered, "bad_signature")
        XCTAssertEqual(try env.send(signed).status, 200, "the bad signature did not consume the presented challenge")

        let replay = try env.signedRequest(device, target: "/v1/protected/r", counter: 1, challenge: afterBadSignature)
        let replayed = try env.send(replay)
        assertRefusal(replayed, status: 401, code: "counter_replay", action: "deny")
        let afterReplay = try assertNextChallenge(replayed, "counter_replay")
        XCTAssertNil(replayed.json["challenge"], "counter_replay is not a challenge refusal: no fresh challenge in the body")

        // Known keyId without challenge: a fresh challenge in the body, the same as the next challenge.
        let noChallenge = try env.send("POST", "/v1/protected/r", headers: [("App-Attest-Key-Id", device.keyId),
                                                                             ("App-Attest-Assertion", "AAAA")], body: Array("x".utf8))
        assertRefusal(noChallenge, status: 401, code: "assertion_missing", action: "refresh_challenge")
        let bodyChallenge = noChallenge.json["challenge"] as? String
        XCTAssertEqual(bodyChallenge.flatMap { Data(base64Encoded: $0) }?.count, 32, "a fresh challenge: \(noChallenge)")
        if env.nextChallenge {
            XCTAssertEqual(try assertNextChallenge(noChallenge, "missing challenge"), bodyChallenge)
        }
        // Known keyId and challenge, no assertion: the next challenge only.
        let noAssertion = try env.send("POST", "/v1/protected/r", headers: [("App-Attest-Key-Id", device.keyId),
                                                                             ("App-Attest-Challenge", afterReplay)])
        assertRefusal(noAssertion, status: 401, code: "assertion_missing")
        XCTAssertNil(noAssertion.json["challenge"], "\(noAssertion)")
        try assertNextChallenge(noAssertion, "missing assertion")

        // Every challenge handed out works.
        var counter: UInt32 = 2
        for challenge in [afterReplay, bodyChallenge ?? ""] {
            let reply = try env.send(try env.signedRequest(device, target: "/v1/protected/r", counter: counter, challenge: challenge))
            XCTAssertEqual(reply.status, 200, "challenge \(counter): \(reply)")
            counter += 1
        }

        // No key named, or a key the gateway does not know: nothing to give.
        let bare = try env.send("POST", "/v1/protected/r", body: Array("x".utf8))
        assertRefusal(bare, status: 401, code: "assertion_missing")
        assertNoNextChallenge(bare, "no keyId")
        XCTAssertNil(bare.json["challenge"], "\(bare)")
        let stranger = try env.makeDevice(.sim)
        let unknownMissing = try env.send("POST", "/v1/protected/r", headers: [("App-Attest-Key-Id", stranger.keyId)])
        assertRefusal(unknownMissing, status: 401, code: "assertion_missing")
        assertNoNextChallenge(unknownMissing, "unknown keyId, evidence missing")
        XCTAssertNil(unknownMissing.json["challenge"], "no challenge for an unknown key: \(unknownMissing)")
        let unknown = try env.send(try env.signedRequest(stranger, target: "/v1/protected/r", counter: 1,
                                                         challenge: unissuedChallenge()))
        assertRefusal(unknown, status: 401, code: "key_unknown", action: "reattest")
        assertNoNextChallenge(unknown, "key_unknown")
    }

    /// A revoked key gets no next challenge (Redis: the operator's revocation in the record).
    func scenarioRevokedKeyGetsNone() throws {
        let device = try env.attestedDevice(.sim)
        let first = try env.send(try env.signedRequest(device, target: "/v1/protected/rv", counter: 1))
        let next = try assertNextChallenge(first, "before revocation")
        XCTAssertEqual(try env.redis?.cli("HSET", "aa:{\(base64URL(device.keyId))}:key", "status", "revoked"), "0")
        let refused = try env.send(try env.signedRequest(device, target: "/v1/protected/rv", counter: 2, challenge: next))
        assertRefusal(refused, status: 403, code: "key_revoked", action: "deny")
        assertNoNextChallenge(refused, "key_revoked")
    }

    /// Monitor routes: the forwarded answer carries the next challenge for valid and invalid
    /// evidence of a known key alike, none without a key.
    func scenarioMonitorAnswersCarryNextChallenge() throws {
        let device = try env.attestedDevice(.sim)
        let signed = try env.signedRequest(device, target: "/v1/monitored/m", body: Array("signed".utf8), counter: 1)
        let tampered = try env.send(signed, body: Array("tampered".utf8))
        XCTAssertEqual(tampered.status, 200, "\(tampered)")
        XCTAssertEqual(tampered.echo?.values("App-Attest-Verdict"), ["invalid"])
        let afterInvalid = try assertNextChallenge(tampered, "monitored invalid")
        let valid = try env.send(signed)
        XCTAssertEqual(valid.echo?.values("App-Attest-Verdict"), ["valid"])
        let afterValid = try assertNextChallenge(valid, "monitored valid")
        XCTAssertNotEqual(afterInvalid, afterValid)
        let bare = try env.send("POST", "/v1/monitored/m", body: Array("x".utf8))
        XCTAssertEqual(bare.status, 200)
        assertNoNextChallenge(bare, "monitored without evidence")
        let chained = try env.send(try env.signedRequest(device, target: "/v1/monitored/m", counter: 2, challenge: afterValid))
        XCTAssertEqual(chained.echo?.values("App-Attest-Verdict"), ["valid"], "\(chained)")
    }

    /// An upstream that sends `App-Attest-Next-Challenge*` fields never reaches the client with them:
    /// on enforce the gateway's own value replaces them, on off routes and unknown keys they are
    /// dropped. (Failing variant: the same upstream asked directly does send them.)
    func scenarioUpstreamCopiesDropped() throws {
        let direct = try Curl.request(port: env.upstream.port, method: "GET", target: "/x?nextspoof=1")
        XCTAssertEqual(direct.headers("App-Attest-Next-Challenge").count, 2, "the upstream does send forged copies: \(direct)")
        XCTAssertEqual(direct.headers("App-Attest-Next-Challenge-Expires"), ["4102444800"])
        XCTAssertEqual(direct.headers("App-Attest-Error"), ["key_unknown"], "and a forged refusal code")

        let device = try env.attestedDevice(.sim)
        let signed = try env.signedRequest(device, method: "GET", target: "/v1/protected/s?nextspoof=1", counter: 1)
        let reply = try env.send(signed)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        let next = try assertNextChallenge(reply, "enforce with forged upstream copies")
        XCTAssertNotEqual(next, "VVBTVFJFQU0tRk9SR0VELUNIQUxMRU5HRS0wMDAwMDA=")
        XCTAssertNotEqual(reply.header("App-Attest-Next-Challenge-Expires"), "4102444800")
        XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/s", counter: 2, challenge: next)).status, 200,
                       "the value the client got is the gateway's")

        let open = try env.send("GET", "/v1/open/s?nextspoof=1")
        XCTAssertEqual(open.status, 200, "\(open)")
        assertNoNextChallenge(open, "off route with forged upstream copies")
        XCTAssertNotNil(open.header("X-Upstream-Connection"), "other upstream fields pass: \(open)")
        let monitored = try env.send("GET", "/v1/monitored/s?nextspoof=1")
        assertNoNextChallenge(monitored, "monitor route without evidence, forged upstream copies")
        // No App-Attest- field of the upstream's reaches the client: a forged App-Attest-Error would
        // pass for a gateway refusal (the SDK re-attests on key_unknown).
        for (route, answer) in [("enforce", reply), ("off", open), ("monitor", monitored)] {
            XCTAssertEqual(answer.headers("App-Attest-Error"), [], "\(route): \(answer)")
        }
    }

    /// A 502 after the challenge was consumed: the fresh challenge of the answer is the next
    /// challenge the commit stored, and it works.
    func scenarioUpstreamFailureCarriesNextChallenge() throws {
        let device = try env.attestedDevice(.sim)
        let reply = try env.send(try env.signedRequest(device, target: "/v1/enforced-down/n", counter: 1))
        assertRefusal(reply, status: 502, code: "upstream_unavailable", action: "refresh_challenge")
        let fresh = try XCTUnwrap(reply.json["challenge"] as? String, "\(reply)")
        XCTAssertEqual(try assertNextChallenge(reply, "502 after consumption"), fresh)
        XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/n", counter: 2, challenge: fresh)).status, 200)
    }

    /// `endpoints.next_challenge: false`: no answer carries one (attestation, forwarded, refused);
    /// a commit stores no extra challenge; the 401 challenge refusals (and a missing challenge with
    /// a known keyId) still carry a fresh challenge in the body; forged upstream copies are dropped.
    func scenarioSwitchedOff() throws {
        let (device, attested) = try attestWithAnswer()
        assertNoNextChallenge(attested, "attestation answer")
        let signed = try env.signedRequest(device, method: "GET", target: "/v1/protected/off?nextspoof=1", counter: 1)
        let reply = try env.send(signed)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        assertNoNextChallenge(reply, "forwarded answer, forged upstream copies")
        if env.storeKind == .redis {
            XCTAssertEqual(try env.redisKeys(device), ["aa:{\(base64URL(device.keyId))}:key"], "the commit stored no next challenge")
        }
        let replayed = try env.send(signed)
        let fresh = assertChallengeRefusal(replayed, code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        assertNoNextChallenge(replayed, "challenge refusal")
        let tampered = try env.send(try env.signedRequest(device, target: "/v1/protected/off", counter: 2), body: Array("t".utf8))
        assertRefusal(tampered, status: 401, code: "bad_signature")
        assertNoNextChallenge(tampered, "bad_signature")
        let missing = try env.send("POST", "/v1/protected/off", headers: [("App-Attest-Key-Id", device.keyId)])
        assertRefusal(missing, status: 401, code: "assertion_missing")
        assertNoNextChallenge(missing, "missing challenge")
        let bodyChallenge = try XCTUnwrap(missing.json["challenge"] as? String, "a known keyId without challenge: \(missing)")
        for (counter, challenge) in [(UInt32(3), fresh ?? ""), (4, bodyChallenge)] {
            XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/off", counter: counter,
                                                              challenge: challenge)).status, 200)
        }
    }
}
