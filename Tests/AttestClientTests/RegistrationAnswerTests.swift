import AttestClient
import Foundation
import XCTest

/// A registration passes only on the gateway's documented answer: `201` with a JSON object naming
/// `kid`, `tier` and `platformAttested`. Anything else (a captive portal's `200` page, a `200` or
/// `201` without those fields) is a failed exchange: nothing assumed, nothing stored.
final class RegistrationAnswerTests: XCTestCase {
    func testA200PageIsNotAPassedRegistration() {
        let h = SDKHarness(appAttest: false)
        h.gateway.script.append(FakeGateway.Scripted(path: "/app-attest/v1/register") { _, _ in
            TransportResponse(status: 200, headers: [("Content-Type", "text/html")], body: Data("<html>Welcome to Hotel WiFi</html>".utf8))
        })
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .failed, "\(result)")
        XCTAssertTrue(result.detail?.contains("HTTP 200") == true, "\(result)")
        XCTAssertNil(h.client.storedAttestation())
        XCTAssertNil(h.store.data(for: "registration"))
    }

    func testAnAnswerWithoutTheDocumentedFieldsIsNotAPassedRegistration() {
        for (status, missing) in [(200, ""), (201, "tier"), (201, "platformAttested"), (201, "kid")] {
            let h = SDKHarness()
            h.gateway.rewrite = { request, answer in
                guard request.url.path.hasSuffix("/register") else { return answer }
                var copy = FakeGateway.withJSON(answer) { $0[missing] = nil }
                copy.status = status
                return copy
            }
            let result = h.client.attest()
            XCTAssertEqual(result.verdict, .failed, "\(status) without \(missing): \(result)")
            XCTAssertFalse(result.platformAttested, "never assumed")
            XCTAssertNil(result.tier)
            XCTAssertNil(h.store.data(for: "registration"))
        }
        // The full answer passes, with the gateway's own words (tier, platformAttested).
        let h = SDKHarness()
        h.gateway.rewrite = { request, answer in
            request.url.path.hasSuffix("/register") ? FakeGateway.withJSON(answer) { $0["tier"] = "device"; $0["platformAttested"] = false } : answer
        }
        let passed = h.client.attest()
        XCTAssertEqual(passed.verdict, .passed)
        XCTAssertEqual(passed.tier, "device")
        XCTAssertFalse(passed.platformAttested, "the gateway's word, although an attestation went up")
    }
}
