@testable import AttestClient
import Foundation
import XCTest

/// A `Retry-After` longer than `retryMaxDelay` is never waited: the call ends at once, unavailable,
/// carrying the gateway's wish. The real clock never sleeps longer than a day.
final class RetryAfterLimitTests: XCTestCase {
    func testARetryAfterBeyondTheMaximumDelayEndsTheRequestAtOnce() {
        let h = SDKHarness()
        XCTAssertEqual(h.client.attest().verdict, .passed)
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(503, "store_unavailable", "retry", retryAfter: 315_360_000) }  // ten years
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .unavailable)
        XCTAssertEqual(response.status, 503)
        XCTAssertEqual(response.retryAfter, 315_360_000)
        XCTAssertEqual(response.error, "store_unavailable")
        XCTAssertEqual(h.clock.sleeps, [], "not waited")
        XCTAssertEqual(h.gateway.count("/v1/orders"), 1)
        // Infinity-like values likewise.
        h.gateway.once("/v1/orders") { _, _ in
            var answer = FakeGateway.refusal(503, "store_unavailable", "retry")
            answer.headers.append(("Retry-After", "1e308"))
            return answer
        }
        XCTAssertEqual(h.client.send(SDKHarness.order(2)).retryAfter, 1e308)
        XCTAssertEqual(h.clock.sleeps, [])
        // Up to retryMaxDelay (30 s) it is waited, and retried.
        h.gateway.once("/v1/orders") { _, _ in FakeGateway.refusal(503, "store_unavailable", "retry", retryAfter: 30) }
        let waited = h.client.send(SDKHarness.order(3))
        XCTAssertEqual(waited.verdict, .accepted)
        XCTAssertNil(waited.retryAfter)
        XCTAssertEqual(h.clock.sleeps, [30])
    }

    func testARetryAfterBeyondTheMaximumDelayFailsARegistrationAtOnce() {
        let h = SDKHarness()
        h.gateway.once("/challenge") { _, _ in FakeGateway.refusal(503, "store_unavailable", "retry", retryAfter: 86_400) }
        let result = h.client.attest()
        XCTAssertEqual(result.verdict, .failed)
        XCTAssertTrue(result.detail?.contains("86400") == true, "\(result)")
        XCTAssertEqual(h.clock.sleeps, [])
        XCTAssertEqual(h.gateway.count("/challenge"), 1)
    }

    func testTheSystemClockSleepsAtMostADay() {
        XCTAssertEqual(SystemClock.duration(315_360_000), 86_400)
        XCTAssertEqual(SystemClock.duration(.infinity), 86_400)
        XCTAssertEqual(SystemClock.duration(.nan), 0)
        XCTAssertEqual(SystemClock.duration(-5), 0)
        XCTAssertEqual(SystemClock.duration(2.5), 2.5)
    }
}
