import Foundation
import GatewayTestSupport
import XCTest

/// Issue 12, the fleet-wide attestation rate (`endpoints.fleet_attest_rate: {count: 2, per: 1h}`):
/// two gateways on one real redis-server share the limit; over it, `POST {prefix}/challenge` with
/// purpose `attest` answers `429 attest_rate_limited` with `Retry-After`; the next window admits
/// again. Assert challenges are never limited.
final class FleetAttestRateTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var policy: E2EPolicy { E2EPolicy(fleetAttestRate: "{count: 2, per: 1h}") }

    func testTwoGatewaysShareTheLimitAndTheNextWindowAdmits() throws {
        moveAwayFromTheHourBoundary()
        let second = try GatewayUnderTest(
            yaml: E2EEnvironment.yaml(store: try XCTUnwrap(env.redis).url, upstreamPort: env.upstream.port, deadPort: env.deadPort,
                                      roots: env.cas.trustedRoots, policy: Self.policy),
            baseDirectory: env.work.path, clock: env.clock.gatewayClock)
        defer { second.stop() }
        let attested = try env.attestedDevice(.sim)  // one attest challenge through the first gateway
        let device = try env.makeDevice(.sim)
        XCTAssertEqual(try challenge(port: second.port, device, "attest").status, 201, "the second of the fleet's two")
        for port in [env.port, second.port] {
            let refused = try challenge(port: port, device, "attest")
            assertRefusal(refused, status: 429, code: "attest_rate_limited", action: "retry")
            let retryAfter = try XCTUnwrap(refused.header("Retry-After").flatMap { Int($0) }, "\(refused)")
            let left = Int((3_600_000 - env.clock.now() % 3_600_000 + 999) / 1000)
            XCTAssertTrue((left - 2...left + 2).contains(retryAfter), "Retry-After \(retryAfter) is the rest of the hour (\(left) s)")
        }
        XCTAssertEqual(try challenge(port: second.port, attested, "assert").status, 201, "assert challenges are not limited")

        // The next window: attest challenges again.
        env.clock.advance(seconds: 3_600 - (env.clock.now() % 3_600_000) / 1000 + 1)
        let again = try challenge(port: second.port, device, "attest")
        XCTAssertEqual(again.status, 201, "\(again)")
    }

    /// Leaves at least two minutes before the hour's window ends, so the window cannot roll over
    /// during the test.
    private func moveAwayFromTheHourBoundary() {
        if 3_600_000 - env.clock.now() % 3_600_000 < 120_000 { env.clock.advance(seconds: 180) }
    }

    private func challenge(port: UInt16, _ device: ClientDevice, _ purpose: String) throws -> HTTPReply {
        let body = try JSONSerialization.data(withJSONObject: ["keyId": device.keyId, "purpose": purpose])
        return try Curl.request(port: port, method: "POST", target: "/app-attest/v1/challenge",
                                headers: [("Content-Type", "application/json")], body: Array(body))
    }
}

/// The same limit on the embedded memory store (one process is the whole fleet).
final class FleetAttestRateMemoryStoreTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }
    override class var policy: E2EPolicy { E2EPolicy(fleetAttestRate: "{count: 2, per: 1h}") }

    func testThirdAttestChallengeOfTheWindowIs429() throws {
        if 3_600_000 - env.clock.now() % 3_600_000 < 120_000 { env.clock.advance(seconds: 180) }
        let device = try env.makeDevice(.sim)
        XCTAssertEqual(try env.requestChallenge(keyId: device.keyId, purpose: "attest").status, 201)
        XCTAssertEqual(try env.requestChallenge(keyId: device.keyId, purpose: "attest").status, 201)
        let refused = try env.requestChallenge(keyId: device.keyId, purpose: "attest")
        assertRefusal(refused, status: 429, code: "attest_rate_limited", action: "retry")
        XCTAssertNotNil(refused.header("Retry-After").flatMap { Int($0) }, "\(refused)")
    }
}
