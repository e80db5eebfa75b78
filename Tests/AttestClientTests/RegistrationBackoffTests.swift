import AttestClient
import Foundation
import XCTest

/// The gateway's `retryAt` lengthens the wait after a refused registration, but never past seven days
/// from now (DESIGN.md section 8's maximum).
final class RegistrationBackoffTests: XCTestCase {
    func testAnAbsurdRetryAtIsCappedAtSevenDays() {
        for retryAt in [1e300, Double.greatestFiniteMagnitude] {
            let h = SDKHarness()
            h.gateway.once("/register") { _, _ in FakeGateway.refusal(403, "registration_refused", "deny", extra: ["retryAt": retryAt]) }
            let refused = h.client.attest()
            XCTAssertEqual(refused.verdict, .failed)
            let formatter = ISO8601DateFormatter()
            let cap = formatter.string(from: Date(timeIntervalSince1970: h.clock.now() + 7 * 86_400))
            XCTAssertTrue(refused.detail?.contains("until \(cap)") == true, "\(refused.detail ?? "-") vs \(cap)")
            h.clock.advance(7 * 86_400 - 1)
            XCTAssertEqual(h.client.attest().verdict, .failed, "still waiting")
            h.clock.advance(2)
            XCTAssertEqual(h.client.attest().verdict, .passed, "seven days later it registers")
        }
        // A retryAt within the cap (two days) is honoured.
        let h = SDKHarness()
        let twoDays = h.clock.now() + 2 * 86_400
        h.gateway.once("/register") { _, _ in FakeGateway.refusal(403, "registration_refused", "deny", extra: ["retryAt": twoDays]) }
        XCTAssertEqual(h.client.attest().verdict, .failed)
        h.clock.advance(2 * 86_400 - 1)
        XCTAssertEqual(h.client.attest().verdict, .failed)
        h.clock.advance(2)
        XCTAssertEqual(h.client.attest().verdict, .passed)
    }

    func testAStoredBackoffBeyondSevenDaysWaitsSevenDays() throws {
        let h = SDKHarness()
        try h.store.set(Data("{\"refusals\":1,\"until\":1e300}".utf8), for: "registration-backoff")  // a corrupted record
        let waiting = h.client.attest()
        XCTAssertEqual(waiting.verdict, .failed)
        XCTAssertEqual(h.gateway.requests.count, 0)
        h.clock.advance(7 * 86_400 + 1)
        XCTAssertEqual(h.client.attest().verdict, .passed, "seven days at most")
    }
}
