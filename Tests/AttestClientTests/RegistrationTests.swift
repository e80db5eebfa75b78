import AttestClient
import AttestCrypto
import Foundation
import GatewayTestSupport
import XCTest

/// `attest()`, the cache across launches, renewal, forgetting, concurrent first calls, the refused
/// registration back-off and the fall-back to App Attest alone, against the scripted fake gateway.
final class RegistrationTests: XCTestCase {
    func testAttestRegistersTheDeviceKeyWithAnAppAttestAttestation() throws {
        let h = SDKHarness()
        XCTAssertNil(h.client.lastAttestation)
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed, "\(result)")
        XCTAssertTrue(result.supported)
        XCTAssertEqual(result.tier, "attested")
        XCTAssertTrue(result.platformAttested)
        XCTAssertTrue(result.platformTokenSpent)
        XCTAssertEqual(result.backing, "software")
        XCTAssertEqual(result.expiresAt, Int(h.clock.now()) + 86_400)
        XCTAssertNil(result.detail)
        let body = try XCTUnwrap(h.gateway.bodies("/register").first)
        XCTAssertNotNil((body["appAttest"] as? [String: String])?["attestation"])
        XCTAssertEqual(Data(base64Encoded: body["publicKey"] as? String ?? "")?.count, 65)
        XCTAssertEqual(result.kid, Data(AttestCrypto.SHA256.hash(Array(Data(base64Encoded: body["publicKey"] as! String)!))).base64EncodedString())
        XCTAssertEqual(h.client.lastAttestation, result)
        XCTAssertEqual(h.client.nextAttestationRefresh, Date(timeIntervalSince1970: h.clock.now() + 43_200), "the gateway's renewAfter")

        // Cached: a second call makes no request.
        let before = h.gateway.requests.count
        XCTAssertEqual(h.client.attest(), result)
        XCTAssertEqual(h.gateway.requests.count, before)
    }

    func testWithoutAppAttestTheDeviceKeyRegistersAloneAsTierDevice() throws {
        let h = SDKHarness(appAttest: false)
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed, "\(result)")
        XCTAssertEqual(result.tier, "device")
        XCTAssertFalse(result.platformAttested)
        XCTAssertFalse(result.platformTokenSpent)
        XCTAssertNil(try XCTUnwrap(h.gateway.bodies("/register").first)["appAttest"])
        XCTAssertNil(try XCTUnwrap(h.gateway.bodies("/register").first)["appId"], "not configured, not sent")
        XCTAssertEqual(h.appAttest.recorded, [], "isSupported false: App Attest is never called")
        // With appId configured, it goes with the registration.
        h.configure = { $0.appId = "ABCDE12345.com.example" }
        let named = h.relaunch()
        named.forgetAttestation()
        XCTAssertEqual(named.attest().verdict, .passed)
        XCTAssertEqual(h.gateway.bodies("/register").last?["appId"] as? String, "ABCDE12345.com.example")
    }

    func testNoDeviceKeyAndNoAppAttestIsUnsupported() {
        let h = SDKHarness(appAttest: false)
        h.keys.failing = true
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .unsupported)
        XCTAssertFalse(result.supported)
        XCTAssertNotNil(result.detail)
        XCTAssertEqual(h.gateway.requests.count, 0, "nobody contacted")
    }

    func testPassedResultIsCachedAcrossLaunchesUntilShortlyBeforeExpiry() throws {
        let h = SDKHarness()
        let first = h.client.attest()
        XCTAssertEqual(first.verdict, .passed)
        let requests = h.gateway.requests.count

        // A new launch: the stored result, no request, no App Attest call.
        let relaunched = h.relaunch()
        XCTAssertNil(relaunched.lastAttestation, "nil before the first attest() of this launch")
        XCTAssertEqual(relaunched.storedAttestation(), first)
        XCTAssertEqual(relaunched.attest(), first)
        XCTAssertEqual(h.gateway.requests.count, requests)
        let appAttestCalls = h.appAttest.recorded.count

        // Within the expiry margin (300 s): no longer valid; attest() registers again with the same device key.
        h.clock.advance(86_400 - 299)
        let later = h.relaunch()
        XCTAssertNil(later.storedAttestation())
        let again = later.attest()
        XCTAssertEqual(again.verdict, .passed)
        XCTAssertEqual(again.kid, first.kid, "the device key survived the relaunch")
        XCTAssertEqual(h.keys.count, 1)
        XCTAssertEqual(h.gateway.count("/register"), 2)
        XCTAssertFalse(again.platformTokenSpent, "the attested App Attest key asserts; no second attestation spent")
        XCTAssertTrue(h.appAttest.recorded.dropFirst(appAttestCalls).allSatisfy { if case .generateAssertion = $0 { return true } else { return false } })
    }

    func testConcurrentFirstCallsCreateOneKeyAndOneRegistration() {
        let h = SDKHarness()
        let client = h.client!
        let results = NSLock()
        nonisolated(unsafe) var seen: [Attestation] = []
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            let result = client.attest()
            results.withLock { seen.append(result) }
        }
        XCTAssertEqual(seen.count, 8)
        XCTAssertTrue(seen.allSatisfy { $0.verdict == .passed && $0.kid == seen[0].kid }, "\(seen)")
        XCTAssertEqual(h.keys.count, 1, "one device key")
        XCTAssertEqual(h.appAttest.generated, 1, "one App Attest key")
        XCTAssertEqual(h.gateway.count("/register"), 1, "one registration")
    }

    func testForgetWaitsForAnAttestInProgressThenForgets() throws {
        let h = SDKHarness()
        let gate = DispatchSemaphore(value: 0)
        h.gateway.registerGate = gate
        let client = h.client!
        let attested = DispatchSemaphore(value: 0)
        let forgot = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var attestResult: Attestation?
        DispatchQueue.global().async { attestResult = client.attest(); attested.signal() }
        waitFor("the registration is in flight") { h.gateway.count("/register") == 1 }
        DispatchQueue.global().async { client.forgetAttestation(); forgot.signal() }
        XCTAssertEqual(forgot.wait(timeout: .now() + 0.3), .timedOut, "forget waits while attest() runs")
        gate.signal()
        XCTAssertEqual(attested.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(forgot.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(attestResult?.verdict, .passed)
        // Forget ran after the registration: the gateway was told, and nothing is left.
        XCTAssertEqual(h.gateway.forgottenKids, [try XCTUnwrap(attestResult?.kid)])
        XCTAssertNil(client.storedAttestation())
        XCTAssertNil(client.lastAttestation)
        XCTAssertNil(client.nextAttestationRefresh)
        XCTAssertNil(h.store.data(for: "registration"))
        XCTAssertNotNil(h.store.data(for: "device-key"), "the device key is kept")
        // The next attest() registers from the start with the same device key.
        h.gateway.registerGate = nil
        let again = client.attest()
        XCTAssertEqual(again.verdict, .passed)
        XCTAssertEqual(again.kid, attestResult?.kid)
        XCTAssertEqual(h.gateway.count("/register"), 2)
    }

    func testRenewExtendsThroughRenewAndKeepsThePreviousResultWhenRenewalFails() throws {
        let h = SDKHarness()
        let first = h.client.attest()
        h.clock.advance(50_000)
        let renewed = h.client.renewAttestation()
        XCTAssertEqual(renewed.verdict, .passed)
        XCTAssertEqual(h.gateway.count("/renew"), 2, "the device key, then the App Attest key that vouched for it")
        XCTAssertEqual(h.gateway.count("/register"), 1, "renewed, not registered again")
        XCTAssertEqual(renewed.expiresAt, Int(h.clock.now()) + 86_400)
        XCTAssertEqual(renewed.kid, first.kid)
        XCTAssertEqual(h.client.nextAttestationRefresh, Date(timeIntervalSince1970: h.clock.now() + 43_200))

        // The gateway down during the renewal: the previous valid result is kept (and said so).
        h.gateway.unreachable = 100
        let kept = h.client.renewAttestation()
        XCTAssertEqual(kept.verdict, .passed)
        XCTAssertEqual(kept.expiresAt, renewed.expiresAt)
        XCTAssertTrue(kept.detail?.contains("renewal failed") == true, "\(kept)")
        XCTAssertEqual(h.client.lastAttestation?.verdict, .passed)
        XCTAssertEqual(h.relaunch().storedAttestation()?.expiresAt, renewed.expiresAt, "the stored registration is unchanged")

        // Failing variant: with nothing valid to keep, the failure is the result.
        h.gateway.unreachable = 100
        h.clock.advance(200_000)
        XCTAssertEqual(h.client.renewAttestation().verdict, .failed)
    }

    func testRenewalRenewsTheVouchingAppAttestKeySoReRegistrationSpendsNoAttestation() throws {
        let h = SDKHarness()
        let first = h.client.attest()
        XCTAssertEqual(first.verdict, .passed, "\(first)")
        let appAttestKeyId = try XCTUnwrap((h.gateway.bodies("/register").first?["appAttest"] as? [String: String])?["keyId"])
        // At the refresh time: the device key renews, then the App Attest key, proven by an assertion.
        h.clock.advance(50_000)
        XCTAssertEqual(h.client.renewAttestation().verdict, .passed)
        let renewals = h.gateway.bodies("/renew")
        XCTAssertEqual(renewals.map { $0["keyId"] as? String }, [first.kid, appAttestKeyId])
        XCTAssertNotNil(renewals.last?["assertion"], "the App Attest key proves with an assertion over renew-v1")
        XCTAssertNil(renewals.last?["signature"])
        // Past the first registration's expiry (inside the renewed one): the device key is forgotten
        // (revoked, lost), and the registration again is made with the App Attest key's assertion,
        // without a second attestation. Without the renewal the gateway answered `key_expired` /
        // `reattest`, and the SDK attested a new key.
        h.clock.advance(50_000)
        h.client.forgetAttestation()
        let again = h.client.attest()
        XCTAssertEqual(again.verdict, .passed, "\(again)")
        XCTAssertEqual(again.tier, "attested")
        XCTAssertNotNil((h.gateway.bodies("/register").last?["appAttest"] as? [String: String])?["assertion"])
        XCTAssertEqual(h.appAttest.recorded.filter { if case .attestKey = $0 { return true } else { return false } }.count, 1,
                       "one attestation in all")
        XCTAssertEqual(h.appAttest.generated, 1, "one App Attest key in all")
    }

    func testRenewalOfADeviceOnlyRegistrationSendsOneRenew() throws {
        let h = SDKHarness(appAttest: false)
        XCTAssertEqual(h.client.attest().verdict, .passed)
        h.clock.advance(50_000)
        XCTAssertEqual(h.client.renewAttestation().verdict, .passed)
        XCTAssertEqual(h.gateway.count("/renew"), 1, "no App Attest key to renew")
        XCTAssertEqual(h.gateway.count("/challenge"), 2)
    }

    func testRefusedRegistrationBacksOffOneHourDoublingToSevenDays() throws {
        let h = SDKHarness()
        // Every registration that carries an App Attest attestation is refused; an assertion by the
        // refused key is unknown to the gateway, so each attempt spends a new attestation.
        h.gateway.script.append(FakeGateway.Scripted(path: "/app-attest/v1/register") { request, _ in
            let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            guard (body?["appAttest"] as? [String: String])?["attestation"] != nil else { return nil }
            return FakeGateway.refusal(403, "registration_refused", "deny")
        })
        var expectedWait: Double = 3600
        for refusal in 1...10 {
            let start = h.clock.now()
            let result = h.client.attest()
            XCTAssertEqual(result.verdict, .failed, "refusal \(refusal)")
            XCTAssertTrue(result.platformTokenSpent)
            let until = start + expectedWait
            let formatter = ISO8601DateFormatter()
            let text = formatter.string(from: Date(timeIntervalSince1970: until))
            XCTAssertTrue(result.detail?.contains("until \(text)") == true, "refusal \(refusal): \(result.detail ?? "-") vs \(text)")
            // Inside the wait: failed again, nobody contacted, nothing spent.
            let requests = h.gateway.requests.count
            let calls = h.appAttest.recorded.count
            h.clock.set(until - 1)
            let waiting = h.client.attest()
            XCTAssertEqual(waiting.verdict, .failed)
            XCTAssertTrue(waiting.detail?.contains(text) == true, waiting.detail ?? "-")
            XCTAssertEqual(h.gateway.requests.count, requests, "no request during the back-off")
            XCTAssertEqual(h.appAttest.recorded.count, calls, "no attestation spent during the back-off")
            h.clock.set(until + 1)
            expectedWait = min(expectedWait * 2, 7 * 86_400)
        }
        // A relaunch keeps the back-off; forgetAttestation() clears it.
        _ = h.client.attest()
        let relaunched = h.relaunch()
        let requests = h.gateway.requests.count
        XCTAssertEqual(relaunched.attest().verdict, .failed)
        XCTAssertEqual(h.gateway.requests.count, requests)
        relaunched.forgetAttestation()
        h.gateway.script.removeAll()
        XCTAssertEqual(relaunched.attest().verdict, .passed)
    }

    func testRefusalWithoutSpentAttestationStartsNoBackoff() {
        let h = SDKHarness(appAttest: false)
        h.gateway.once("/register") { _, _ in FakeGateway.refusal(403, "registration_refused", "deny") }
        XCTAssertEqual(h.client.attest().verdict, .failed)
        XCTAssertNil(h.store.data(for: "registration-backoff"))
        XCTAssertEqual(h.client.attest().verdict, .passed, "no wait: nothing of Apple's was spent")
    }

    func testGatewayWithoutRegistrationsFallsBackToAppAttestAlone() throws {
        let h = SDKHarness()
        h.gateway.registerSupported = false
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed, "\(result)")
        XCTAssertEqual(result.tier, "attested")
        XCTAssertEqual(result.backing, "app_attest")
        XCTAssertEqual(h.gateway.count("/attest"), 1)
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .accepted, "\(response)")
        XCTAssertNotNil(h.gateway.requests.last?.header("App-Attest-Assertion"), "signed with an App Attest assertion")
        // Renewal and forgetting prove with App Attest assertions over renew-v1 / forget-v1.
        h.clock.advance(100)
        let renewed = h.client.renewAttestation()
        XCTAssertEqual(renewed.verdict, .passed, "\(renewed)")
        XCTAssertEqual(h.gateway.count("/renew"), 1)
        XCTAssertEqual(renewed.kid, result.kid, "the same key, no new attestation")
        XCTAssertEqual(h.gateway.count("/attest"), 1)
        XCTAssertNotNil(h.gateway.bodies("/renew").first?["assertion"])
        h.client.forgetAttestation()
        XCTAssertEqual(h.gateway.forgottenKids, [try XCTUnwrap(result.kid)])

        // Failing variant: mode .deviceKey never falls back.
        let strict = SDKHarness(appAttest: true)
        strict.gateway.registerSupported = false
        strict.mode = .deviceKey
        XCTAssertEqual(strict.relaunch().attest().verdict, .failed)
        XCTAssertEqual(strict.gateway.count("/attest"), 0)
    }

    func testRenewsByItselfWhenTheRefreshTimeComes() throws {
        let h = SDKHarness()
        h.gateway.registrationTTL = 4  // renewAfter = now + 2 s (the timer waits real seconds)
        h.configure = { $0.automaticRenewal = true; $0.expiryMargin = 1 }
        let client = h.relaunch()
        let first = client.attest()
        XCTAssertEqual(first.verdict, .passed)
        let refresh = try XCTUnwrap(client.nextAttestationRefresh)
        XCTAssertEqual(refresh.timeIntervalSince1970, h.clock.now() + 2)
        // Not due on the SDK's clock: the timer fires and renews nothing (the failing variant).
        Thread.sleep(forTimeInterval: 2.5)
        XCTAssertEqual(h.gateway.count("/renew"), 0)
        // Due: the clock moved; the next timer (re-armed by storedAttestation) renews.
        h.clock.advance(2)
        XCTAssertNotNil(client.storedAttestation())
        waitFor("the automatic renewal (the device key, then its App Attest key)", timeout: 10) { h.gateway.count("/renew") == 2 }
        waitFor("the renewed result", timeout: 5) { client.lastAttestation?.expiresAt == Int(h.clock.now()) + 4 }
        client.forgetAttestation()
        XCTAssertNil(client.nextAttestationRefresh, "forgetting stops the automatic renewal")
    }

    func testAsyncTwinsAnswerAsTheBlockingCalls() async throws {
        let h = SDKHarness()
        let client = h.client!
        let attestation = await client.attest()
        XCTAssertEqual(attestation.verdict, .passed)
        let stored = await client.storedAttestation()
        XCTAssertEqual(stored, attestation)
        let response = await client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .accepted)
        let renewed = await client.renewAttestation()
        XCTAssertEqual(renewed.verdict, .passed)
        await client.forgetAttestation()
        let afterForget = await client.storedAttestation()
        XCTAssertNil(afterForget)
    }
}
