import AttestClient
import Foundation
import XCTest

/// Times a hostile or broken gateway sends (huge, non-finite, of another type) make its answer
/// malformed: a failed result, never a trap in a conversion to `Int`.
final class GatewayNumberTests: XCTestCase {
    func testUnusableExpiresAtFailsTheRegistrationInsteadOfTrapping() {
        let values: [Any] = [1e300, -1e300, 1e19, "tomorrow"]
        for value in values {
            let h = SDKHarness(appAttest: false)
            h.gateway.rewrite = { request, answer in
                request.url.path.hasSuffix("/register") ? FakeGateway.withJSON(answer) { $0["expiresAt"] = value } : answer
            }
            let result = h.client.attest()
            XCTAssertEqual(result.verdict, .failed, "expiresAt \(value): \(result)")
            XCTAssertTrue(result.detail?.contains("expiresAt") == true, "\(result)")
            XCTAssertNil(h.client.storedAttestation(), "nothing stored from a malformed answer")
        }
        // A fractional time is usable: rounded down.
        let h = SDKHarness(appAttest: false)
        let expiry = h.clock.now() + 1000.7
        h.gateway.rewrite = { request, answer in
            request.url.path.hasSuffix("/register") ? FakeGateway.withJSON(answer) { $0["expiresAt"] = expiry } : answer
        }
        let passed = h.client.attest()
        XCTAssertEqual(passed.verdict, .passed, "\(passed)")
        XCTAssertEqual(passed.expiresAt, Int(h.clock.now()) + 1000)
    }

    func testUnusableRenewAfterInARenewalKeepsThePreviousResult() {
        let h = SDKHarness(appAttest: false)
        let first = h.client.attest()
        XCTAssertEqual(first.verdict, .passed)
        h.gateway.rewrite = { request, answer in
            request.url.path.hasSuffix("/renew") ? FakeGateway.withJSON(answer) { $0["renewAfter"] = 1e19 } : answer
        }
        let kept = h.client.renewAttestation()
        XCTAssertEqual(h.gateway.count("/renew"), 1)
        XCTAssertEqual(kept.verdict, .passed)
        XCTAssertEqual(kept.expiresAt, first.expiresAt, "the previous result, not the malformed renewal")
        XCTAssertTrue(kept.detail?.contains("renewAfter") == true, "\(kept)")
    }

    func testUnusableExpiresAtInAnAppAttestAnswerFailsTheAttestation() {
        let h = SDKHarness()
        h.mode = .appAttestOnly
        let client = h.relaunch()
        h.gateway.rewrite = { request, answer in
            request.url.path.hasSuffix("/attest") ? FakeGateway.withJSON(answer) { $0["expiresAt"] = -1e300 } : answer
        }
        let result = client.attest()
        XCTAssertEqual(result.verdict, .failed, "\(result)")
        XCTAssertTrue(result.detail?.contains("expiresAt") == true, "\(result)")
    }
}
