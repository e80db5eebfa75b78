import AttestClient
import Foundation
import XCTest

/// Apple's error rules (DESIGN.md section 9), one test per `DCError` code, with the fake App Attest
/// service and the fake gateway.
final class AppAttestErrorTests: XCTestCase {
    func attestCalls(_ h: SDKHarness) -> [(String, Data)] {
        h.appAttest.recorded.compactMap { if case .attestKey(let k, let d) = $0 { return (k, d) } else { return nil } }
    }

    func testFeatureUnsupportedFallsBackToTheDeviceKey() throws {
        let h = SDKHarness()
        h.appAttest.generateErrors = [.featureUnsupported]
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed)
        XCTAssertEqual(result.tier, "device")
        XCTAssertFalse(result.platformAttested)
        XCTAssertTrue(result.detail?.contains("featureUnsupported") == true, result.detail ?? "-")
        XCTAssertNil(try XCTUnwrap(h.gateway.bodies("/register").first)["appAttest"])
    }

    func testServerUnavailableRetriesWithTheSameKeyAndClientDataHash() throws {
        let h = SDKHarness()
        h.appAttest.attestErrors = [.serverUnavailable, .serverUnavailable]
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed)
        XCTAssertEqual(result.tier, "attested", "the third try (two retries) succeeded")
        let calls = attestCalls(h)
        XCTAssertEqual(calls.count, 3)
        XCTAssertEqual(Set(calls.map(\.0)).count, 1, "the same key")
        XCTAssertEqual(Set(calls.map(\.1)).count, 1, "the same clientDataHash")
        XCTAssertEqual(h.appAttest.generated, 1)
        XCTAssertEqual(h.clock.sleeps, [2, 4], "appAttestRetryDelay, doubling")
    }

    func testServerUnavailableThroughoutRegistersTheDeviceKeyAloneAndKeepsTheKey() throws {
        let h = SDKHarness()
        h.appAttest.attestErrors = [.serverUnavailable, .serverUnavailable, .serverUnavailable]
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed)
        XCTAssertEqual(result.tier, "device")
        XCTAssertFalse(result.platformTokenSpent)
        XCTAssertTrue(result.detail?.contains("serverUnavailable") == true)
        let key = try XCTUnwrap(h.store.json("app-attest-key"))
        XCTAssertEqual(key["attested"] as? Bool, false)
        // Later (renewal): the same key is attested.
        let renewed = h.relaunch().renewAttestation()
        XCTAssertEqual(renewed.verdict, .passed)
        XCTAssertEqual(h.appAttest.generated, 1, "the kept key, not a new one")
        XCTAssertEqual(attestCalls(h).last?.0, key["keyId"] as? String)
    }

    func testInvalidKeyOfAKeyAppleAttestedBeforeIsKeptAndAsserts() throws {
        let h = SDKHarness()
        // The app lost its record of having attested the key: Apple says invalidKey; an assertion works.
        let keyId = try h.appAttest.generateKey()
        h.appAttest.markAttested(keyId)
        try h.store.set(try JSONSerialization.data(withJSONObject: ["keyId": keyId, "attested": false]), for: "app-attest-key")
        h.gateway.once("/register") { request, _ in
            let body = try! JSONSerialization.jsonObject(with: request.body) as! [String: Any]
            XCTAssertNotNil((body["appAttest"] as? [String: String])?["assertion"], "the key asserts")
            return FakeGateway.refusal(401, "key_unknown", "reattest")  // this gateway never saw it
        }
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed, "\(result)")
        let calls = h.appAttest.recorded
        let firstHash = try XCTUnwrap(attestCalls(h).first?.1, "\(calls) \(result)")
        XCTAssertTrue(calls.contains(.generateAssertion(keyId, firstHash)), "the state was established with an assertion: \(calls)")
        XCTAssertNotEqual(try XCTUnwrap(h.store.json("app-attest-key"))["keyId"] as? String, keyId, "replaced once the gateway refused it")
        XCTAssertTrue(h.store.removals.contains("app-attest-key"), "removed through the same store item")
    }

    func testInvalidKeyOfARejectedKeyIsRemovedAndReplaced() throws {
        let h = SDKHarness()
        try h.store.set(try JSONSerialization.data(withJSONObject: ["keyId": "cmVqZWN0ZWQ=", "attested": false]), for: "app-attest-key")
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .passed)
        XCTAssertEqual(result.tier, "attested")
        let calls = h.appAttest.recorded
        // attestKey(old) -> invalidKey; generateAssertion(old) -> invalidKey (rejected); then a new key, attested.
        guard calls.count == 4, case .attestKey("cmVqZWN0ZWQ=", _) = calls[0], case .generateAssertion("cmVqZWN0ZWQ=", _) = calls[1],
              calls[2] == .generateKey, case .attestKey(let newKey, _) = calls[3] else {
            return XCTFail("\(calls)")
        }
        XCTAssertNotEqual(newKey, "cmVqZWN0ZWQ=")
        XCTAssertEqual(h.store.removals, ["app-attest-key"])
        XCTAssertEqual(h.store.json("app-attest-key")?["keyId"] as? String, newKey)
    }

    func testInvalidKeyOnAnAttestedKeysAssertionReplacesIt() throws {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        let oldKey = try XCTUnwrap(h.store.json("app-attest-key")?["keyId"] as? String)
        h.appAttest.assertionErrors = [.invalidKey]
        h.clock.advance(90_000)
        let again = h.relaunch().attest()
        XCTAssertEqual(again.verdict, .passed)
        XCTAssertTrue(again.platformTokenSpent, "the replacement key was attested")
        XCTAssertNotEqual(h.store.json("app-attest-key")?["keyId"] as? String, oldKey)
    }

    func testOtherErrorsDiscardTheKey() throws {
        for code in [AppAttestServiceError.invalidInput, .unknownSystemFailure] {
            let h = SDKHarness()
            h.appAttest.attestErrors = [code]
            let result = h.client.attest()
            XCTAssertEqual(result.verdict, .passed, "\(code)")
            XCTAssertEqual(result.tier, "device", "\(code): registered without App Attest this time")
            XCTAssertNil(h.store.data(for: "app-attest-key"), "\(code): the key is discarded")
            XCTAssertEqual(attestCalls(h).count, 1, "\(code): not retried")
            // The next attempt uses a new key.
            h.clock.advance(90_000)
            XCTAssertEqual(h.relaunch().attest().tier, "attested")
            XCTAssertEqual(h.appAttest.generated, 2, "\(code)")
        }
    }

    func testErrorCodesHaveApplesRawValues() {
        XCTAssertEqual(AppAttestServiceError.allCases.map(\.rawValue), [0, 1, 2, 3, 4])
        XCTAssertEqual(AppAttestServiceError(rawValue: 4), .serverUnavailable)
        XCTAssertNil(AppAttestServiceError(rawValue: 5))
    }
}
