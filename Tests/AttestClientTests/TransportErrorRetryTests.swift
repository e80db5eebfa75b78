import AttestClient
import Foundation
import XCTest

/// A protected request that may have reached the upstream is sent again only when its method is
/// idempotent; an error known to happen before sending (connection refused, DNS) is retried for any method.
final class TransportErrorRetryTests: XCTestCase {
    func testATimedOutPostIsNotSentAgain() {
        let h = SDKHarness(nextChallenges: true)
        XCTAssertEqual(h.client.attest().verdict, .passed)
        h.gateway.unreachableError = .timedOut
        h.gateway.unreachable = 1
        let response = h.client.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .unavailable)
        XCTAssertEqual(response.roundTrips, 1)
        XCTAssertEqual(h.gateway.count("/v1/orders"), 1, "sent once: it may have reached the upstream")
        XCTAssertEqual(h.clock.sleeps, [])
        XCTAssertTrue(response.detail?.contains("not sent again") == true, "\(response)")
        // PATCH likewise (an accepted GET first brings the next challenge again).
        let get = ProtectedRequest(method: "GET", target: "/v1/orders?n=3")
        XCTAssertEqual(h.client.send(get).verdict, .accepted)
        h.gateway.unreachable = 1
        var patch = SDKHarness.order(2)
        patch.method = "PATCH"
        XCTAssertEqual(h.client.send(patch).verdict, .unavailable)
        XCTAssertEqual(h.gateway.requests.filter { $0.method == "PATCH" }.count, 1)
        // The timed-out GET (idempotent) is sent again.
        XCTAssertEqual(h.client.send(get).verdict, .accepted)
        let gets = h.gateway.requests.filter { $0.method == "GET" }.count
        h.gateway.unreachable = 1
        XCTAssertEqual(h.client.send(get).verdict, .accepted)
        XCTAssertEqual(h.gateway.requests.filter { $0.method == "GET" }.count, gets + 2)
    }

    func testARefusedConnectionIsRetriedForAPost() {
        let h = SDKHarness(nextChallenges: true)
        XCTAssertEqual(h.client.attest().verdict, .passed)
        for code in [URLError.Code.cannotConnectToHost, .cannotFindHost, .dnsLookupFailed] {
            h.gateway.unreachableError = code
            h.gateway.unreachable = 1
            XCTAssertEqual(h.client.send(SDKHarness.order(1)).verdict, .accepted, "\(code): nothing was sent")
        }
    }
}
