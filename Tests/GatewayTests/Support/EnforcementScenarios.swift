import Foundation
import Synchronization
import XCTest

/// The assertion flows over real sockets, shared by the Redis, memory-store and simulator test
/// classes (same behaviour expected from both stores and both client devices). Each scenario makes
/// its own device keys, so it does not depend on what ran before.
extension E2ETestCase {
    /// The gateway's own header family as the upstream may see it on a valid request.
    static let injectedOnValid: Set<String> = ["app-attest-verdict", "app-attest-key-id", "app-attest-counter",
                                               "app-attest-environment", "app-attest-reason",
                                               "app-attest-validation-category", "app-attest-bundle-version",
                                               "app-attest-risk-metric", "app-attest-tier", "app-attest-platform-attested",
                                               "app-attest-integrity"]

    /// A valid request is forwarded byte-identical with the verdict headers; the counter is stored and
    /// the challenge consumed.
    func scenarioValidRequestForwarded(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        // Close to the route's 64KiB limit, every byte value, and bytes that look like HTTP framing.
        let body = randomBytes(60 * 1024) + Array("\r\n0\r\n\r\nGET / HTTP/1.1\r\n\r\n".utf8)
        let target = "/v1/protected/orders/42?currency=EUR&note=a%20b&empty="
        let signed = try env.signedRequest(device, method: "POST", target: target, body: body, counter: 1)
        let reply = try env.send(signed)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        guard let echo = reply.echo else { return XCTFail("no upstream echo: \(reply)") }
        XCTAssertEqual(echo.method, "POST")
        XCTAssertEqual(echo.target, target, "the request-target reaches the upstream unchanged")
        XCTAssertEqual(echo.bodyLength, body.count)
        XCTAssertEqual(echo.bodySHA256, sha256Hex(body), "the upstream received the body byte for byte")
        XCTAssertEqual(echo.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(echo.values("App-Attest-Key-Id"), [device.keyId], "verified keyId, standard base64")
        XCTAssertEqual(echo.values("App-Attest-Counter"), ["1"])
        XCTAssertEqual(echo.values("App-Attest-Environment"), ["development"])
        for field in echo.fields(withPrefix: "App-Attest-") {
            XCTAssertTrue(Self.injectedOnValid.contains(field.name.lowercased()), "\(field.name) must not reach the upstream")
        }
        XCTAssertEqual(echo.values("App-Attest-Challenge"), [])
        XCTAssertEqual(echo.values("App-Attest-Assertion"), [])

        XCTAssertEqual(try env.storedCounter(device), 1)
        if env.storeKind == .redis {
            XCTAssertEqual(try env.redisKeyHash(device)["ctr"], "1")
            // The challenge was consumed; the answer's next challenge is pending.
            let next = try XCTUnwrap(reply.header("App-Attest-Next-Challenge"), "\(reply)")
            let keys = try env.redisKeys(device)
            XCTAssertFalse(keys.contains("aa:{\(base64URL(device.keyId))}:ch:\(base64URL(signed.challenge))"),
                           "the challenge was consumed: \(keys)")
            XCTAssertTrue(keys.contains("aa:{\(base64URL(device.keyId))}:ch:\(base64URL(next))"), "\(keys)")
            XCTAssertTrue(keys.contains("aa:{\(base64URL(device.keyId))}:key"), "\(keys)")
        }

        // Without a body (client data carries SHA-256 of zero bytes).
        let get = try env.signedRequest(device, method: "GET", target: "/v1/protected/orders?page=2", counter: 2)
        let got = try env.send(get)
        XCTAssertEqual(got.status, 200, "\(got)")
        XCTAssertEqual(got.echo?.method, "GET")
        XCTAssertEqual(got.echo?.bodyLength, 0)
        XCTAssertEqual(got.echo?.values("App-Attest-Counter"), ["2"])
        XCTAssertEqual(try env.storedCounter(device), 2)
    }

    /// The same request again is refused (its challenge is used) and changes nothing; a new
    /// challenge with an old counter is refused as `counter_replay` and does not burn the challenge.
    func scenarioReplayRefused(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let signed = try env.signedRequest(device, target: "/v1/protected/pay", body: Array("amount=10".utf8), counter: 1)
        XCTAssertEqual(try env.send(signed).status, 200)
        let forwarded = try env.upstream.requestCount()

        let replay = try env.send(signed)
        let fresh = assertChallengeRefusal(replay, code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        XCTAssertEqual(try env.upstream.requestCount(), forwarded, "a replay never reaches the upstream")
        XCTAssertEqual(try env.storedCounter(device), 1, "nothing changed")
        if env.storeKind == .redis { XCTAssertEqual(try env.redisKeyHash(device)["ctr"], "1") }

        // The fresh challenge of the refusal works (no extra round trip).
        if let fresh {
            let retried = try env.signedRequest(device, target: "/v1/protected/pay", body: Array("amount=10".utf8), counter: 2,
                                                challenge: fresh)
            XCTAssertEqual(try env.send(retried).status, 200)
        }

        // A fresh challenge but an old counter: counter_replay, and the challenge stays pending.
        let challenge = try env.challenge(for: device, purpose: "assert")
        let old = try env.signedRequest(device, target: "/v1/protected/pay", counter: 2, challenge: challenge)
        assertRefusal(try env.send(old), status: 401, code: "counter_replay", action: "deny")
        XCTAssertEqual(try env.storedCounter(device), 2)
        let next = try env.signedRequest(device, target: "/v1/protected/pay", counter: 3, challenge: challenge)
        XCTAssertEqual(try env.send(next).status, 200, "the counter_replay attempt did not consume the challenge")
        XCTAssertEqual(try env.storedCounter(device), 3)
    }

    /// The same assertion sent on two connections at the same moment is accepted exactly once.
    func scenarioConcurrentDuplicateAcceptedOnce(_ kind: DeviceKind, rounds: Int = 4) throws {
        let device = try env.attestedDevice(kind)
        for round in 1...rounds {
            let signed = try env.signedRequest(device, target: "/v1/protected/race?round=\(round)",
                                               body: Array("round \(round)".utf8), counter: UInt32(round))
            let before = try env.upstream.requestCount()
            let replies: [HTTPReply]
            if env.transport.isHTTP2 {
                // Two HTTP/2 clients at once (the race client speaks HTTP/1.1 only).
                let results = Mutex<[HTTPReply]>([])
                let environment = env!
                DispatchQueue.concurrentPerform(iterations: 2) { _ in
                    let reply = (try? environment.send(signed)) ?? HTTPReply(status: 0, headers: [], body: [])
                    results.withLock { $0.append(reply) }
                }
                replies = results.withLock { $0 }
            } else {
                replies = try RaceClient.run(port: env.port, requests: [signed.raw, signed.raw], tlsCA: env.transport.tlsCA)
            }
            let statuses = replies.map(\.status).sorted()
            XCTAssertEqual(statuses, [200, 401], "round \(round): exactly one accepted: \(replies)")
            if let refused = replies.first(where: { $0.status == 401 }) {
                XCTAssertTrue(["challenge_unknown", "counter_replay"].contains(refused.errorCode ?? ""), "\(refused)")
            }
            XCTAssertEqual(try env.upstream.requestCount() - before, 1, "round \(round): the upstream saw it once")
            XCTAssertEqual(try env.storedCounter(device), UInt32(round))
        }
    }

    /// With `counter_window: 8`, two assertions arriving out of order are both accepted, once each.
    func scenarioWindowAcceptsOutOfOrder(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let first = try env.challenge(for: device, purpose: "assert")
        let second = try env.challenge(for: device, purpose: "assert")
        let higher = try env.signedRequest(device, target: "/v1/windowed/a", counter: 2, challenge: first)
        let lower = try env.signedRequest(device, target: "/v1/windowed/b", counter: 1, challenge: second)
        let a = try env.send(higher)
        XCTAssertEqual(a.status, 200, "\(a)")
        XCTAssertEqual(a.echo?.values("App-Attest-Counter"), ["2"])
        let b = try env.send(lower)
        XCTAssertEqual(b.status, 200, "the lower counter is inside the window: \(b)")
        XCTAssertEqual(b.echo?.values("App-Attest-Counter"), ["1"])
        XCTAssertEqual(try env.storedCounter(device), 2, "the highest counter stays stored")

        // Each counter is accepted once: again with fresh challenges, both are replays.
        for counter: UInt32 in [1, 2] {
            let again = try env.signedRequest(device, target: "/v1/windowed/c", counter: counter)
            assertRefusal(try env.send(again), status: 401, code: "counter_replay", action: "deny")
        }
        let next = try env.signedRequest(device, target: "/v1/windowed/d", counter: 3)
        XCTAssertEqual(try env.send(next).status, 200)
    }

    /// Without a window, the lower counter that arrives second is refused.
    func scenarioNoWindowRefusesLowerCounter(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let first = try env.challenge(for: device, purpose: "assert")
        let second = try env.challenge(for: device, purpose: "assert")
        let higher = try env.signedRequest(device, target: "/v1/protected/a", counter: 2, challenge: first)
        let lower = try env.signedRequest(device, target: "/v1/protected/b", counter: 1, challenge: second)
        XCTAssertEqual(try env.send(higher).status, 200)
        let before = try env.upstream.requestCount()
        assertRefusal(try env.send(lower), status: 401, code: "counter_replay", action: "deny")
        XCTAssertEqual(try env.upstream.requestCount(), before)
        XCTAssertEqual(try env.storedCounter(device), 2)
        if env.storeKind == .redis { XCTAssertEqual(try env.redisKeyHash(device)["ctr"], "2") }
    }

    /// Changing the body, method, path or query after signing is `bad_signature`; the failed attempts
    /// do not consume the challenge, so the original request passes afterwards.
    func scenarioChangedRequestRefused(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let signed = try env.signedRequest(device, method: "POST", target: "/v1/protected/item?x=1",
                                           body: Array("amount=10".utf8), counter: 1)
        let before = try env.upstream.requestCount()
        let variants: [(String, HTTPReply)] = [
            ("body", try env.send(signed, body: Array("amount=99".utf8))),
            ("method", try env.send(signed, method: "PUT")),
            ("path", try env.send(signed, target: "/v1/protected/other?x=1")),
            ("query", try env.send(signed, target: "/v1/protected/item?x=2")),
            ("query added", try env.send(signed, target: "/v1/protected/item?x=1&y=2")),
        ]
        for (what, reply) in variants {
            XCTAssertEqual(reply.status, 401, "changed \(what): \(reply)")
            XCTAssertEqual(reply.errorCode, "bad_signature", "changed \(what): \(reply)")
            XCTAssertEqual(reply.header("App-Attest-Error"), "bad_signature", "changed \(what)")
        }
        XCTAssertEqual(try env.upstream.requestCount(), before, "no changed request reached the upstream")
        XCTAssertEqual(try env.storedCounter(device), 0, "nothing changed")
        let original = try env.send(signed)
        XCTAssertEqual(original.status, 200, "the challenge survived the failed attempts: \(original)")
        XCTAssertEqual(original.echo?.target, "/v1/protected/item?x=1")
        XCTAssertEqual(try env.storedCounter(device), 1)
    }

    /// An expired challenge (clock moved past the TTL) is refused with a fresh challenge that works.
    func scenarioExpiredChallenge(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let signed = try env.signedRequest(device, target: "/v1/protected/late", counter: 1)
        env.clock.advance(seconds: 301)  // challenge_ttl is 300s
        let reply = try env.send(signed)
        let fresh = assertChallengeRefusal(reply, code: "challenge_expired", notBefore: env.clock.now() / 1000)
        XCTAssertEqual(try env.storedCounter(device), 0)
        guard let fresh else { return }
        let retried = try env.signedRequest(device, target: "/v1/protected/late", counter: 1, challenge: fresh)
        XCTAssertEqual(try env.send(retried).status, 200, "the fresh challenge is valid at the moved time")
    }

    /// A used challenge is refused even for a new assertion.
    func scenarioUsedChallenge(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let signed = try env.signedRequest(device, target: "/v1/protected/once", counter: 1)
        XCTAssertEqual(try env.send(signed).status, 200)
        let reuse = try env.signedRequest(device, target: "/v1/protected/twice", body: Array("other".utf8), counter: 2,
                                          challenge: signed.challenge)
        assertChallengeRefusal(try env.send(reuse), code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        XCTAssertEqual(try env.storedCounter(device), 1)
    }

    /// A challenge issued to another key is refused and stays usable by its own key.
    func scenarioChallengeOfAnotherKey(_ kind: DeviceKind) throws {
        let owner = try env.attestedDevice(kind)
        let other = try env.attestedDevice(kind)
        let challenge = try env.challenge(for: owner, purpose: "assert")
        let stolen = try env.signedRequest(other, target: "/v1/protected/x", counter: 1, challenge: challenge)
        assertChallengeRefusal(try env.send(stolen), code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        XCTAssertEqual(try env.storedCounter(other), 0)
        let own = try env.signedRequest(owner, target: "/v1/protected/x", counter: 1, challenge: challenge)
        XCTAssertEqual(try env.send(own).status, 200, "the owner's challenge was not burnt")
    }

    /// A challenge issued for attestation is refused on an assertion (and the reverse is covered by
    /// the attestation endpoint tests).
    func scenarioWrongPurpose(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let attestChallenge = try env.challenge(for: device, purpose: "attest")
        let signed = try env.signedRequest(device, target: "/v1/protected/p", counter: 1, challenge: attestChallenge)
        let fresh = assertChallengeRefusal(try env.send(signed), code: "challenge_wrong_purpose", notBefore: env.clock.now() / 1000)
        XCTAssertEqual(try env.storedCounter(device), 0)
        if let fresh {
            let retried = try env.signedRequest(device, target: "/v1/protected/p", counter: 1, challenge: fresh)
            XCTAssertEqual(try env.send(retried).status, 200, "the fresh challenge is an assert challenge")
        }
    }

    /// A wrong challenge value is refused and does not burn the pending one.
    func scenarioWrongChallengeKeepsPending(_ kind: DeviceKind) throws {
        let device = try env.attestedDevice(kind)
        let pending = try env.challenge(for: device, purpose: "assert")
        let wrong = try env.signedRequest(device, target: "/v1/protected/w", counter: 1, challenge: unissuedChallenge())
        assertChallengeRefusal(try env.send(wrong), code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        let garbage = try env.send("POST", "/v1/protected/w", headers: [("App-Attest-Key-Id", device.keyId),
                                                                        ("App-Attest-Challenge", "not*base64"),
                                                                        ("App-Attest-Assertion", "AAAA")], body: [])
        assertRefusal(garbage, status: 400, code: "encoding_invalid")
        let right = try env.signedRequest(device, target: "/v1/protected/w", counter: 1, challenge: pending)
        XCTAssertEqual(try env.send(right).status, 200, "the pending challenge still works")
    }

    /// A method with a lower-case letter is `400 method_invalid` (action `deny`) on every route, never
    /// forwarded: applications behind the gateway often fold the method's case (werkzeug and Django
    /// upper-case it), so `post` on a `mode: off` route next to a POST-only enforced one would run the
    /// protected POST handler without evidence (probe: `Config/gateway.yaml`'s own route pair). Upper-
    /// case extension methods still pass.
    func scenarioLowerCaseMethodRefused() throws {
        let before = try env.upstream.requestCount()
        for (method, target) in [("post", "/v1/open/buy"), ("Post", "/v1/open/buy"), ("get", "/v1/open/x"),
                                 ("post", "/v1/protected/buy")] {
            // No body: over HTTP/2 a refusal answered before END_STREAM ends with RST_STREAM NO_ERROR,
            // which Debian's curl 7.88 drops now and then (bench/PERFORMANCE.md, "Tenth pass").
            let reply = try env.send(method, target)
            assertRefusal(reply, status: 400, code: "method_invalid", action: "deny")
            XCTAssertEqual(reply.header("App-Attest-Error"), "method_invalid", "\(method) \(target)")
        }
        XCTAssertEqual(try env.upstream.requestCount(), before, "none reached the upstream")
        XCTAssertEqual(try env.send("POST", "/v1/open/buy", body: Array("sku=1".utf8)).status, 200)
        // upstream.py answers a method it has no handler for with its own 501: forwarded, not refused.
        let dav = try env.send("PROPFIND", "/v1/open/dav")
        XCTAssertEqual(dav.status, 501, "\(dav)")
        XCTAssertNil(dav.header("App-Attest-Error"), "the upstream answered, not the gateway: \(dav)")
    }

    /// A key the gateway never attested: `401 key_unknown`, action `reattest` (challenge endpoint and
    /// protected route); nothing reaches the upstream.
    func scenarioUnknownKey(_ kind: DeviceKind) throws {
        let device = try env.makeDevice(kind)
        assertRefusal(try env.requestChallenge(keyId: device.keyId, purpose: "assert"), status: 401, code: "key_unknown",
                      action: "reattest")
        let before = try env.upstream.requestCount()
        let signed = try env.signedRequest(device, target: "/v1/protected/u", counter: 1, challenge: unissuedChallenge())
        assertRefusal(try env.send(signed), status: 401, code: "key_unknown", action: "reattest")
        XCTAssertEqual(try env.upstream.requestCount(), before)
        XCTAssertNil(try env.storedKey(device))
    }
}
