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
}

/// The same over HTTP/2 (h2c): the stream waits for the asynchronous answer.
final class UpstreamFailureAfterConsumptionOverHTTP2Tests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .h2c }

    func testBadGatewayAfterConsumptionAnswersRefreshChallengeWithAFreshChallenge() throws { try scenarioRefreshAfterConsumption() }
    func testBadGatewayWithoutConsumptionKeepsRetry() throws { try scenarioRetryWithoutConsumption() }
}

extension E2ETestCase {
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
