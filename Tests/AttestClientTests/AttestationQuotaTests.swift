import AttestClient
import Foundation
import XCTest

/// Apple's App Attest attestations are a quota: a gateway that fails or keeps refusing never makes the
/// SDK spend one per call. Any attempt that spent one and did not end in a registration starts the
/// registration back-off (one hour, doubling, at most seven days).
final class AttestationQuotaTests: XCTestCase {
    func attestations(_ h: SDKHarness) -> Int {
        h.appAttest.recorded.filter { if case .attestKey = $0 { return true } else { return false } }.count
    }

    func testAppAttestOnlyAgainstA502ResendsTheSameAttestationThenBacksOff() {
        let h = SDKHarness()
        h.mode = .appAttestOnly
        let client = h.relaunch()
        h.gateway.script.append(FakeGateway.Scripted(path: "/app-attest/v1/attest") { _, _ in
            TransportResponse(status: 502, headers: [("Content-Type", "text/html")], body: Data("<html>bad gateway</html>".utf8))
        })
        for _ in 1...10 {
            XCTAssertEqual(client.attest().verdict, .failed)
            h.clock.advance(60)
        }
        XCTAssertEqual(attestations(h), 1, "one attestation spent, then the back-off")
        XCTAssertEqual(h.appAttest.generated, 1, "one key")
        XCTAssertEqual(h.gateway.count("/attest"), 4, "the same attestation sent again on the 5xx (maxRetries 3), never a new one")
        XCTAssertEqual(Set(h.gateway.bodies("/attest").compactMap { $0["attestation"] as? String }).count, 1)
        let waiting = client.attest()
        XCTAssertTrue(waiting.detail?.contains("no new attempt until") == true, "\(waiting)")
    }

    func testAppAttestOnlyRecoversAKeyTheGatewayStoredBeforeA502() {
        let h = SDKHarness()
        h.mode = .appAttestOnly
        let client = h.relaunch()
        // The gateway stores the key, then a proxy in front answers 502 (to every resend too).
        h.gateway.rewrite = { request, answer in
            request.url.path.hasSuffix("/attest") ? TransportResponse(status: 502, body: Data("bad gateway".utf8)) : answer
        }
        XCTAssertEqual(client.attest().verdict, .failed)
        h.gateway.rewrite = nil
        h.clock.advance(3601)  // the back-off
        let recovered = client.attest()
        XCTAssertEqual(recovered.verdict, .passed, "\(recovered)")
        XCTAssertFalse(recovered.platformTokenSpent)
        XCTAssertEqual(attestations(h), 1, "the key the gateway holds, renewed: no second attestation")
        XCTAssertEqual(h.appAttest.generated, 1)
        XCTAssertEqual(h.gateway.count("/renew"), 1)
        XCTAssertEqual(client.send(SDKHarness.order(1)).verdict, .accepted)

        // A key the gateway does not hold (the 502 came before it) is replaced after the back-off.
        let other = SDKHarness()
        other.mode = .appAttestOnly
        let second = other.relaunch()
        other.gateway.script.append(FakeGateway.Scripted(path: "/app-attest/v1/attest") { _, _ in TransportResponse(status: 502) })
        XCTAssertEqual(second.attest().verdict, .failed)
        other.gateway.script.removeAll()
        other.clock.advance(3601)
        XCTAssertEqual(second.attest().verdict, .passed)
        XCTAssertEqual(attestations(other), 2)
    }

    func testAppAttestOnlyWithARouteAlwaysAskingToReattestBacksOff() {
        let h = SDKHarness()
        h.mode = .appAttestOnly
        let client = h.relaunch()
        h.gateway.script.append(FakeGateway.Scripted(path: "/v1/orders") { _, _ in FakeGateway.refusal(401, "key_unknown", "reattest") })
        for n in 1...10 {
            XCTAssertNotEqual(client.send(SDKHarness.order(n)).verdict, .accepted)
            h.clock.advance(60)
        }
        XCTAssertEqual(attestations(h), 1, "the first attestation; its key refused within the hour starts the back-off")
        // An hour later (the wait) the SDK tries once more: one more attestation, then two hours.
        h.clock.advance(3600)
        XCTAssertNotEqual(client.send(SDKHarness.order(11)).verdict, .accepted)
        for n in 12...20 { _ = client.send(SDKHarness.order(n)); h.clock.advance(600) }
        XCTAssertEqual(attestations(h), 2)
    }

    func testAutomaticModeWithRegisterAlwaysAskingToReattestBacksOff() {
        let h = SDKHarness()
        h.gateway.script.append(FakeGateway.Scripted(path: "/app-attest/v1/register") { _, _ in FakeGateway.refusal(401, "key_unknown", "reattest") })
        for _ in 1...10 {
            XCTAssertEqual(h.client.attest().verdict, .failed)
            h.clock.advance(60)
        }
        XCTAssertEqual(attestations(h), 1)
        XCTAssertNotNil(h.store.data(for: "registration-backoff"))
    }

    func testAutomaticModeWithARouteAskingToReattestAndAssertionsRefusedBacksOff() {
        let h = SDKHarness()
        h.gateway.script.append(FakeGateway.Scripted(path: "/v1/orders") { _, _ in FakeGateway.refusal(401, "key_unknown", "reattest") })
        h.gateway.script.append(FakeGateway.Scripted(path: "/app-attest/v1/register") { request, _ in
            let body = (try? JSONSerialization.jsonObject(with: request.body)) as? [String: Any]
            guard (body?["appAttest"] as? [String: String])?["assertion"] != nil else { return nil }  // attestations pass
            return FakeGateway.refusal(401, "key_unknown", "reattest")
        })
        for n in 1...10 {
            XCTAssertNotEqual(h.client.send(SDKHarness.order(n)).verdict, .accepted)
            h.clock.advance(60)
        }
        XCTAssertEqual(attestations(h), 1, "a key attested within the hour and refused is not replaced at once")
        XCTAssertNotNil(h.store.data(for: "registration-backoff"))
    }

    func testAReattestLongAfterTheAttestationRegistersAgainAtOnce() {
        let h = SDKHarness()
        h.mode = .appAttestOnly
        let client = h.relaunch()
        XCTAssertEqual(client.send(SDKHarness.order(1)).verdict, .accepted)
        h.clock.advance(2 * 3600)
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(401, "key_expired", "reattest") }
        XCTAssertEqual(client.send(SDKHarness.order(2)).verdict, .accepted, "a key that served two hours is replaced without waiting")
        XCTAssertEqual(attestations(h), 2)
        XCTAssertNil(h.store.data(for: "registration-backoff"))
    }
}
