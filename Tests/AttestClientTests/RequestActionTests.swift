import AttestClient
import Foundation
import XCTest

/// Protected requests: signing, the next challenge, and every refusal `action` with `Retry-After` and
/// the jittered exponential back-off (DESIGN.md sections 2 and 9).
final class RequestActionTests: XCTestCase {
    func testSignedRequestIsAcceptedAndCostsTwoRoundTripsWithoutNextChallenges() {
        let h = SDKHarness()
        for n in 1...3 {
            let response = h.client.send(SDKHarness.order(n))
            XCTAssertEqual(response.verdict, .accepted, "\(response)")
            XCTAssertEqual(response.status, 200)
            XCTAssertEqual(response.roundTrips, 2, "a challenge, then the request")
        }
        XCTAssertNotNil(h.gateway.requests.last?.header("App-Attest-Signature"), "signed by the device key")
    }

    func testNextChallengeMakesOneRoundTripPerRequestWhileFresh() {
        let h = SDKHarness(nextChallenges: true)
        XCTAssertEqual(h.client.attest().verdict, .passed)
        let challenges = h.gateway.count("/challenge")
        for n in 1...4 {
            let response = h.client.send(SDKHarness.order(n))
            XCTAssertEqual(response.verdict, .accepted, "\(response)")
            XCTAssertEqual(response.roundTrips, 1, "request \(n) used the previous answer's challenge")
        }
        XCTAssertEqual(h.gateway.count("/challenge"), challenges, "no challenge request")
        // Stale: the next challenge expired (300 s), so one challenge request first.
        h.clock.advance(400)
        let stale = h.client.send(SDKHarness.order(5))
        XCTAssertEqual(stale.verdict, .accepted)
        XCTAssertEqual(stale.roundTrips, 2)
        XCTAssertEqual(h.gateway.count("/challenge"), challenges + 1, "a new challenge, not the expired one (which a refusal would replace)")
    }

    func testRefreshChallengeUsesTheAnswersChallengeAtOnce() {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        h.gateway.once("/v1/orders") { _, _ in
            FakeGateway.refusal(401, "challenge_expired", "refresh_challenge")  // no challenge in it
        }
        let withoutFresh = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(withoutFresh.verdict, .accepted)
        XCTAssertEqual(withoutFresh.roundTrips, 4, "challenge, refused, a new challenge, accepted")

        // A refusal carrying a fresh challenge: used at once.
        let challenges = h.gateway.count("/challenge")
        let first = h.gateway.requests.count
        h.gateway.once("/v1/orders") { request, _ in
            // A real refusal of the fake gateway: the challenge is consumed, a fresh one is in the answer.
            var copy = request
            copy.headers = copy.headers.map { $0.name == "App-Attest-Challenge" ? ($0.name, "AAAA") : $0 }
            return try! h.gateway.send(copy)
        }
        let withFresh = h.client.send(SDKHarness.order(2))
        XCTAssertEqual(withFresh.verdict, .accepted, "\(withFresh)")
        XCTAssertEqual(withFresh.roundTrips, 3, "challenge, refused with a fresh challenge, accepted")
        XCTAssertEqual(h.gateway.count("/challenge"), challenges + 1)
        _ = first
    }

    func testReattestRegistersAgainAndResendsOnce() {
        let h = SDKHarness()
        let first = h.client.attest()
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(401, "key_expired", "reattest") }
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .accepted, "\(response)")
        XCTAssertEqual(h.gateway.count("/register"), 2, "registered again")
        XCTAssertEqual(h.client.lastAttestation?.kid, first.kid)
        // Failing variant: reattest answered twice in a row is final.
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(401, "key_expired", "reattest") }
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(401, "key_expired", "reattest") }
        let twice = h.client.send(SDKHarness.order(2))
        XCTAssertEqual(twice.verdict, .refused)
        XCTAssertEqual(twice.error, "key_expired")
        XCTAssertEqual(twice.action, "reattest")
    }

    /// Two sends told to re-attest for the same registration register again once: the send whose
    /// answer comes after the other re-registered finds that fresh registration (the same device key,
    /// so the same kid) and resends with it. Before, it took the fresh registration for the stale one
    /// (compared by kid), dropped it and registered again: twenty concurrent sends made twenty
    /// `/register` calls. Ordered with semaphores, no sleeping.
    func testConcurrentReattestsOfOneRegistrationRegisterOnce() {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        XCTAssertEqual(h.gateway.count("/register"), 1)
        let bInside = DispatchSemaphore(value: 0), aDone = DispatchSemaphore(value: 0), bDone = DispatchSemaphore(value: 0)
        // B's request reaches the gateway first and is held; its refusal comes after A registered again.
        h.gateway.once("/v1/orders") { _, _ in
            bInside.signal()
            aDone.wait()
            return FakeGateway.refusal(401, "key_expired", "reattest")
        }
        let bResponse = SDKResponseBox()
        DispatchQueue.global().async {
            bResponse.value = h.client.send(SDKHarness.order(1))
            bDone.signal()
        }
        XCTAssertEqual(bInside.wait(timeout: .now() + 30), .success)
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(401, "key_expired", "reattest") }
        let a = h.client.send(SDKHarness.order(2))
        XCTAssertEqual(a.verdict, .accepted, "\(a)")
        XCTAssertEqual(h.gateway.count("/register"), 2, "A registered again")
        aDone.signal()
        XCTAssertEqual(bDone.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(bResponse.value?.verdict, .accepted, "\(String(describing: bResponse.value))")
        XCTAssertEqual(h.gateway.count("/register"), 2, "B used A's fresh registration instead of registering a third time")
    }

    func testRetryHonoursRetryAfterWithJitteredExponentialBackoff() {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        for _ in 0..<2 { h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(503, "store_unavailable", "retry", retryAfter: 3) } }
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .accepted)
        XCTAssertEqual(h.clock.sleeps, [3, 3], "Retry-After (above the exponential 0.5 s, 1 s), jitter 0")

        // Without Retry-After: 0.5, 1, 2 s; then maxRetries (3) is exhausted.
        let sleeps = h.clock.sleeps.count
        for _ in 0..<4 { h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(429, "rate_limited", "retry") } }
        let exhausted = h.client.send(SDKHarness.order(2))
        XCTAssertEqual(exhausted.verdict, .unavailable)
        XCTAssertEqual(exhausted.status, 429)
        XCTAssertEqual(exhausted.error, "rate_limited")
        XCTAssertEqual(Array(h.clock.sleeps.dropFirst(sleeps)), [0.5, 1, 2])

        // Jitter stretches each delay by up to 20 %, never below Retry-After.
        h.jitter = 1
        let jittered = h.relaunch()
        let before = h.clock.sleeps.count
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(503, "store_unavailable", "retry", retryAfter: 10) }
        XCTAssertEqual(jittered.send(SDKHarness.order(3)).verdict, .accepted)
        XCTAssertEqual(Array(h.clock.sleeps.dropFirst(before)), [12])
    }

    func testServiceUnavailableNeverReattests() {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        // Even a (wrong) 503 saying reattest is a retry.
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(503, "store_unavailable", "reattest", retryAfter: 1) }
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .accepted)
        XCTAssertEqual(h.gateway.count("/register"), 1, "no re-registration")
        XCTAssertEqual(h.clock.sleeps, [1])
        // The same answer with 401 does re-register (the failing variant).
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(401, "key_unknown", "reattest") }
        XCTAssertEqual(h.client.send(SDKHarness.order(2)).verdict, .accepted)
        XCTAssertEqual(h.gateway.count("/register"), 2)
    }

    func testDenyIsFinal() {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(403, "app_not_allowed", "deny") }
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .refused)
        XCTAssertEqual(response.status, 403)
        XCTAssertEqual(response.error, "app_not_allowed")
        XCTAssertEqual(response.action, "deny")
        XCTAssertEqual(response.roundTrips, 2)
        XCTAssertEqual(h.clock.sleeps, [])
    }

    func testLostConnectionsAreRetriedThenUnavailable() {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        h.gateway.unreachable = 2
        XCTAssertEqual(h.client.send(SDKHarness.order(1)).verdict, .accepted)
        h.gateway.unreachable = 100
        let down = h.client.send(SDKHarness.order(2))
        XCTAssertEqual(down.verdict, .unavailable)
        XCTAssertEqual(down.status, 0)
        XCTAssertEqual(h.client.lastAttestation?.verdict, .passed, "an outage changes nothing about the registration")
    }

    func testWithoutAttestationNothingIsSent() {
        let h = SDKHarness(appAttest: false)
        h.keys.failing = true
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .notAttested)
        XCTAssertEqual(h.gateway.requests.count, 0)
    }

    func testBoundHeadersAndBasePathAreSigned() {
        let h = SDKHarness()
        h.configure = { $0.gateway = URL(string: "https://gateway.test/api/")! }
        h.gateway.basePath = "/api"
        let client = h.relaunch()
        XCTAssertEqual(client.attest().verdict, .passed)
        let request = ProtectedRequest(method: "POST", target: "/v1/orders?n=1", headers: [("Authorization", "Bearer t")],
                                       body: Data("x".utf8), boundHeaders: ["Authorization"])
        // The fake gateway checks binding v1 without bound fields: a bound header must change the bytes (refused),
        // while the same request without binding passes with the base path in the signed target.
        let bound = client.send(request)
        XCTAssertEqual(bound.verdict, .refused, "the bound header is part of the signed bytes")
        XCTAssertEqual(bound.error, "bad_signature")
        var plain = request
        plain.boundHeaders = []
        XCTAssertEqual(client.send(plain).verdict, .accepted)
        XCTAssertEqual(h.gateway.requests.last?.url.path, "/api/v1/orders")
    }

    func testALostDeviceKeyRegistersANewOneInsteadOfSigningWithAStranger() throws {
        let h = SDKHarness(appAttest: false)
        let first = h.client.attest()
        XCTAssertEqual(first.verdict, .passed)
        try h.store.set(nil, for: "device-key")  // e.g. a Keychain item gone while the registration stayed
        let relaunched = h.relaunch()
        let response = relaunched.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .accepted, "\(response)")
        XCTAssertEqual(h.keys.count, 2, "a new device key, made under the serialized registration")
        XCTAssertEqual(h.gateway.count("/register"), 2)
        XCTAssertNotEqual(relaunched.lastAttestation?.kid, first.kid)
    }
}

/// A response handed from a background send to the test (written before its semaphore is signalled).
final class SDKResponseBox: @unchecked Sendable {  // written once, before `bDone` is signalled; read after
    var value: ProtectedResponse?
}
