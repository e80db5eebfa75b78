import Foundation
import GatewayTestSupport
import XCTest

/// `attest-client-example` (AttestClient's public API only, App Attest played by the simulator) against
/// the real `attest-gateway` binary with a real redis-server and the Python upstream (issue 11 "Proven
/// by"): the attestation passes at the expected tier, N protected requests are accepted, each
/// request's round trips agree with the gateway's access log.
final class AttestClientExampleTests: XCTestCase {
    /// The gateway binary with Redis, the upstream and the simulator's test CA trusted; access log on.
    final class Setup {
        let redis: RedisServer
        let upstream: UpstreamProcess
        let dead: ReservedPort
        let work: URL
        let gateway: ChildProcess
        let port: UInt16
        let ca: String

        init() throws {
            let cas = try TestCAs.shared()
            ca = cas.sim.path
            redis = try RedisServer()
            upstream = try UpstreamProcess()
            dead = try ReservedPort()
            work = try E2EPaths.temporaryDirectory("sdk-example")
            let yaml = E2EEnvironment.yaml(store: redis.url, upstreamPort: upstream.port, deadPort: dead.port, roots: cas.trustedRoots, access: true)
            // A route that takes device keys (the others keep the default min_tier: attested).
            let withDeviceRoute = yaml.replacingOccurrences(of: "routes:\n", with: """
                routes:
                  - name: device
                    path_prefix: /v1/device
                    upstream: app
                    min_tier: device

                """)
            let config = work.appendingPathComponent("gateway.yaml")
            try withDeviceRoute.write(to: config, atomically: true, encoding: .utf8)
            gateway = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path])
            guard let started = StartedLine.wait(for: gateway), let port = started.port else {
                throw ChildProcessError.notReady("attest-gateway did not start: \(gateway.output)")
            }
            self.port = port
        }

        /// Runs the example; returns its exit status and its JSON lines.
        func example(_ extra: [String]) throws -> (status: Int32, lines: [[String: Any]], output: String) {
            let binary = try BuiltProducts.executable("attest-client-example")
            let run = try ChildProcess.run(binary, ["--gateway", "http://127.0.0.1:\(port)", "--app-id", E2EEnvironment.appId, "--ca", ca] + extra)
            return (run.status, StartedLine.jsonLines(run.output), run.output)
        }

        /// The gateway's access lines so far.
        var accessLines: [[String: Any]] { StartedLine.jsonLines(gateway.output).filter { $0["type"] as? String == "access" } }

        deinit {
            gateway.stop(signal: SIGKILL, grace: 1)
            upstream.stop()
            redis.stop()
            try? FileManager.default.removeItem(at: work)
        }
    }

    func testExampleAttestsAndSendsAcceptedRequestsWithTheExpectedRoundTrips() throws {
        let setup = try Setup()
        let requests = 5
        let run = try setup.example(["--requests", String(requests)])
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.lines.count, 1 + requests, run.output)
        let attestation = try XCTUnwrap(run.lines.first, run.output)
        XCTAssertEqual(attestation["verdict"] as? String, "passed", run.output)
        XCTAssertEqual(attestation["tier"] as? String, "attested", run.output)
        XCTAssertEqual(attestation["platformAttested"] as? Bool, true, run.output)
        XCTAssertEqual(attestation["platformTokenSpent"] as? Bool, true, run.output)
        XCTAssertNotNil(attestation["kid"] as? String)
        let answers = Array(run.lines.dropFirst())
        XCTAssertEqual(answers.filter { $0["status"] as? Int == 200 && $0["verdict"] as? String == "accepted" }.count, requests, run.output)
        let trips = answers.compactMap { $0["roundTrips"] as? Int }
        XCTAssertEqual(trips.count, requests)
        XCTAssertEqual(Array(trips.dropFirst()), Array(repeating: 1, count: requests - 1),
                       "one round trip per request after the first (the gateway's next challenge): \(trips)")

        // The access log agrees: the protected requests, the challenges, and nothing else after the attestation.
        var access: [[String: Any]] = []
        waitFor("the access lines of every request", timeout: 10) {
            access = setup.accessLines
            return access.filter { $0["route"] as? String == "protected" }.count >= requests
        }
        let protected = access.filter { $0["route"] as? String == "protected" }
        XCTAssertEqual(protected.count, requests, "\(access)")
        XCTAssertTrue(protected.allSatisfy { $0["status"] as? Int == 200 && $0["verdict"] as? String == "valid" }, "\(protected)")
        // The example's own lines (its user agent; the set-up's curl probes left out), in time order: each
        // event loop writes its own lines, so lines of different connections may come out of order.
        let example = access.filter { ($0["user_agent"] as? String)?.hasPrefix("attest-client-example") == true }
            .enumerated().sorted { ($0.element["ts"] as? String ?? "", $0.offset) < ($1.element["ts"] as? String ?? "", $1.offset) }
            .map(\.element)
        let attestationLines = example.firstIndex { $0["route"] as? String == "endpoint:attest" || $0["route"] as? String == "endpoint:register" }
        let afterAttestation = try XCTUnwrap(attestationLines.map { Array(example[($0 + 1)...]) }, "\(access)")
        XCTAssertEqual(afterAttestation.count, trips.reduce(0, +), "one access line per round trip the SDK counted: \(afterAttestation)")
        XCTAssertEqual(afterAttestation.filter { $0["route"] as? String == "endpoint:challenge" }.count, trips.reduce(0, +) - requests)
    }

    func testDeviceKeyOnlyRegistersAtTierDeviceAndIsRefusedOnAttestedRoutes() throws {
        let setup = try Setup()
        let run = try setup.example(["--requests", "2", "--device-key", "--route", "/v1/device/example"])
        let attestation = try XCTUnwrap(run.lines.first, run.output)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(attestation["verdict"] as? String, "passed", run.output)
        XCTAssertEqual(attestation["tier"] as? String, "device", run.output)
        XCTAssertEqual(attestation["platformAttested"] as? Bool, false, run.output)
        XCTAssertEqual(attestation["backing"] as? String, "software", run.output)
        XCTAssertEqual(run.lines.dropFirst().filter { $0["status"] as? Int == 200 && $0["verdict"] as? String == "accepted" }.count, 2, run.output)
        // The failing variant: a route of the default min_tier (attested) refuses a device key, finally.
        let strict = try setup.example(["--requests", "1", "--device-key"])
        XCTAssertEqual(strict.status, 1, strict.output)
        let refused = try XCTUnwrap(strict.lines.last, strict.output)
        XCTAssertEqual(refused["status"] as? Int, 403, strict.output)
        XCTAssertEqual(refused["verdict"] as? String, "refused", strict.output)
        XCTAssertEqual(refused["error"] as? String, "tier_too_low", strict.output)
    }

    func testRenewAndForgetThroughTheExample() throws {
        let setup = try Setup()
        let run = try setup.example(["--requests", "1", "--renew", "--forget"])
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.lines.count, 4, run.output)
        guard run.lines.count == 4 else { return }
        let (first, request, renewed, forgot) = (run.lines[0], run.lines[1], run.lines[2], run.lines[3])
        XCTAssertEqual(request["verdict"] as? String, "accepted", run.output)
        XCTAssertEqual(renewed["renewed"] as? Bool, true)
        XCTAssertEqual(renewed["verdict"] as? String, "passed", run.output)
        XCTAssertEqual(renewed["tier"] as? String, "attested", run.output)
        XCTAssertEqual(forgot["forgotten"] as? Bool, true)
        XCTAssertEqual(forgot["stored"] as? Bool, false, "nothing stored after forgetAttestation()")
        var access: [[String: Any]] = []
        waitFor("the access lines of the renewal", timeout: 10) {
            access = setup.accessLines
            return access.contains { $0["path"] as? String == "/app-attest/v1/forget" }
        }
        func answered(_ route: String) -> [Int] { access.filter { $0["route"] as? String == route }.compactMap { $0["status"] as? Int } }
        XCTAssertEqual(renewed["kid"] as? String, first["kid"] as? String, "renewed, the same key")
        XCTAssertEqual(renewed["platformTokenSpent"] as? Bool, false, "an assertion, no attestation spent")
        // The device key, then the App Attest key that vouched for its registration (AttestClient.renewVouchingKey).
        XCTAssertEqual(answered("endpoint:renew"), [200, 200], "\(access)")
        let renewedKeys = access.filter { $0["route"] as? String == "endpoint:renew" }.compactMap { $0["key_id"] as? String }
        XCTAssertEqual(renewedKeys.count, 2)
        XCTAssertEqual(Set(renewedKeys).count, 2, "two keys renewed: \(renewedKeys)")
        XCTAssertEqual(answered("endpoint:forget"), [200], "\(access)")
    }
}
