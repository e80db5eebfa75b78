@testable import GatewayHTTP
import GatewayIO
import XCTest

/// Passive ejection and active health verdicts of one endpoint (`UpstreamEndpointState`), with the
/// time given (nanoseconds), no sockets.
final class UpstreamEndpointStateTests: XCTestCase {
    private let s: UInt64 = 1_000_000_000

    private func endpoint() -> UpstreamEndpointState {
        let e = UpstreamEndpointState(index: 0, endpoint: .tcp(host: "127.0.0.1", port: 9), serverName: nil)
        e.setAddresses([SocketAddress.literal(host: "127.0.0.1", port: 9)!])
        return e
    }

    func testEjectionTimeDoublesUpToTheMaximum() {
        let policy = UpstreamEjection(consecutiveErrors: 3, baseTime: 10, maxTime: 35)
        XCTAssertEqual((1...5).map(policy.ejectionTime), [10, 20, 35, 35, 35])
    }

    func testEjectedAtTheThresholdThenAgainAtTheFirstFailureWithDoubleTime() {
        let policy = UpstreamEjection(consecutiveErrors: 3, baseTime: 10, maxTime: 300)
        let e = endpoint()
        let t0 = 100 * s
        XCTAssertNil(e.connectFailed(now: t0, policy: policy))
        XCTAssertNil(e.connectFailed(now: t0, policy: policy))
        XCTAssertEqual(e.connectFailed(now: t0, policy: policy), 10, "the third error in a row ejects")
        XCTAssertFalse(e.isAvailable(now: t0 + 9 * s))
        XCTAssertTrue(e.isAvailable(now: t0 + 10 * s), "tried again after the ejection time")
        XCTAssertEqual(e.connectFailed(now: t0 + 10 * s, policy: policy), 20, "the first failure after rejoining ejects again, twice as long")
        XCTAssertFalse(e.isAvailable(now: t0 + 29 * s))
        e.connected()
        XCTAssertNil(e.connectFailed(now: t0 + 31 * s, policy: policy), "a successful connect ends the streak")
        XCTAssertNil(e.connectFailed(now: t0 + 31 * s, policy: policy))
        XCTAssertEqual(e.connectFailed(now: t0 + 31 * s, policy: policy), 10, "back to the base time")
    }

    func testErrorsAreNotCountedWhileEjectedAndZeroNeverEjects() {
        let e = endpoint()
        XCTAssertEqual(e.connectFailed(now: s, policy: UpstreamEjection(consecutiveErrors: 1, baseTime: 10)), 10)
        XCTAssertNil(e.connectFailed(now: 2 * s, policy: UpstreamEjection(consecutiveErrors: 1, baseTime: 10)), "already ejected")
        let never = endpoint()
        for i in 0..<100 { XCTAssertNil(never.connectFailed(now: UInt64(i) * s, policy: UpstreamEjection(consecutiveErrors: 0))) }
        XCTAssertTrue(never.isAvailable(now: 200 * s))
    }

    func testHealthVerdictNeedsItsThresholdInARow() {
        let e = endpoint()
        XCTAssertNil(e.recordCheck(passed: false, healthyThreshold: 2, unhealthyThreshold: 3))
        XCTAssertNil(e.recordCheck(passed: false, healthyThreshold: 2, unhealthyThreshold: 3))
        XCTAssertNil(e.recordCheck(passed: true, healthyThreshold: 2, unhealthyThreshold: 3), "a pass breaks the streak")
        XCTAssertNil(e.recordCheck(passed: false, healthyThreshold: 2, unhealthyThreshold: 3))
        XCTAssertNil(e.recordCheck(passed: false, healthyThreshold: 2, unhealthyThreshold: 3))
        XCTAssertEqual(e.recordCheck(passed: false, healthyThreshold: 2, unhealthyThreshold: 3), false, "down after 3 in a row")
        XCTAssertFalse(e.isAvailable(now: 0))
        XCTAssertNil(e.recordCheck(passed: true, healthyThreshold: 2, unhealthyThreshold: 3))
        XCTAssertEqual(e.recordCheck(passed: true, healthyThreshold: 2, unhealthyThreshold: 3), true, "up after 2 in a row")
        XCTAssertTrue(e.isAvailable(now: 0))
    }

    func testUnresolvedIsNeverAvailable() {
        let e = UpstreamEndpointState(index: 0, endpoint: .tcp(host: "example.invalid", port: 80), serverName: nil)
        XCTAssertFalse(e.isResolved)
        XCTAssertFalse(e.isAvailable(now: 0))
        XCTAssertNil(e.nextAddress())
    }
}
