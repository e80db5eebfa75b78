import Foundation
import XCTest

/// A 502 / 504 on a protected route after the assertion was accepted (its challenge consumed)
/// answers `refresh_challenge` with a fresh challenge (issue 9), as the 401 challenge refusals do:
/// `retry` with the same evidence could never pass again. Real redis-server, real upstream process,
/// the `down` upstream nobody listens on; the simulator device.
final class UpstreamFailureAfterConsumptionTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }

    func testBadGatewayAfterConsumptionAnswersRefreshChallengeWithAFreshChallenge() throws { try scenarioRefreshAfterConsumption() }
    func testBadGatewayWithoutConsumptionKeepsRetry() throws { try scenarioRetryWithoutConsumption() }
    func testRouteResponseTimeoutAfterConsumptionAnswersRefreshChallenge() throws { try scenarioTimeoutAfterConsumption() }
    func testRouteResponseTimeoutOverridesTheUpstreams() throws { try scenarioRouteResponseTimeout() }
}

/// The same over HTTP/2 (h2c): the stream waits for the asynchronous answer.
final class UpstreamFailureAfterConsumptionOverHTTP2Tests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .h2c }

    func testBadGatewayAfterConsumptionAnswersRefreshChallengeWithAFreshChallenge() throws { try scenarioRefreshAfterConsumption() }
    func testBadGatewayWithoutConsumptionKeepsRetry() throws { try scenarioRetryWithoutConsumption() }
    func testRouteResponseTimeoutAfterConsumptionAnswersRefreshChallenge() throws { try scenarioTimeoutAfterConsumption() }
    func testRouteResponseTimeoutOverridesTheUpstreams() throws { try scenarioRouteResponseTimeout() }
}

extension E2ETestCase {
    /// A route `response_timeout` (300ms) shorter than the upstream's answer (2s) on an enforced
    /// route: 504 `upstream_timeout` with `refresh_challenge` and a fresh challenge.
    func scenarioTimeoutAfterConsumption() throws {
        let device = try env.attestedDevice(.sim)
        let signed = try env.signedRequest(device, method: "GET", target: "/v1/enforced-slow/x?delay=2000", counter: 1)
        let reply = try env.send(signed)
        assertRefusal(reply, status: 504, code: "upstream_timeout", action: "refresh_challenge")
        let fresh = try XCTUnwrap(reply.json["challenge"] as? String, "\(reply)")
        let retried = try env.signedRequest(device, method: "GET", target: "/v1/enforced-slow/x", counter: 2, challenge: fresh)
        XCTAssertEqual(try env.send(retried).status, 200, "the fresh challenge works, and a quick answer is in time")
    }

    /// The route's `response_timeout` applies to its requests only: the same slow answer is a 504
    /// on the route with 300ms and a 200 on a route that keeps the upstream's 30s.
    func scenarioRouteResponseTimeout() throws {
        let slow = try env.send("GET", "/v1/open-slow/x?delay=1000")
        assertRefusal(slow, status: 504, code: "upstream_timeout", action: "retry")
        XCTAssertEqual(try env.send("GET", "/v1/open/x?delay=1000").status, 200)
        XCTAssertEqual(try env.send("GET", "/v1/open-slow/x?delay=10").status, 200)
    }

    /// Valid evidence, dead upstream: 502 refresh_challenge with a fresh challenge that the key can
    /// use at once; the spent challenge is refused as used.
    func scenarioRefreshAfterConsumption() throws {
        let device = try env.attestedDevice(.sim)
        let signed = try env.signedRequest(device, target: "/v1/enforced-down/order", counter: 1)
        let reply = try env.send(signed)
        assertRefusal(reply, status: 502, code: "upstream_unavailable", action: "refresh_challenge")
        XCTAssertNil(reply.header("Retry-After"), "\(reply)")
        let fresh = try XCTUnwrap(reply.json["challenge"] as? String, "a fresh challenge: \(reply)")
        XCTAssertEqual(Data(base64Encoded: fresh)?.count, 32)
        XCTAssertGreaterThan((reply.json["expiresAt"] as? NSNumber)?.int64Value ?? 0, env.clock.now() / 1000)
        XCTAssertEqual(try env.storedCounter(device), 1, "the assertion was accepted before the upstream failed")

        // The old evidence can never pass again: its challenge is gone.
        let again = try env.send(signed, target: "/v1/protected/order")
        XCTAssertEqual(again.status, 401, "\(again)")
        // The fresh challenge works.
        let retried = try env.signedRequest(device, target: "/v1/protected/order", counter: 2, challenge: fresh)
        XCTAssertEqual(try env.send(retried).status, 200)
    }

    /// Without a valid assertion nothing was consumed: a route in mode off keeps `retry`, and an
    /// enforced route refuses the missing evidence before the upstream is tried.
    func scenarioRetryWithoutConsumption() throws {
        let off = try env.send("GET", "/v1/down/x")
        assertRefusal(off, status: 502, code: "upstream_unavailable", action: "retry")
        XCTAssertNil(off.json["challenge"], "\(off)")
        let missing = try env.send("GET", "/v1/enforced-down/x")
        XCTAssertEqual(missing.status, 401, "\(missing)")
    }
}
