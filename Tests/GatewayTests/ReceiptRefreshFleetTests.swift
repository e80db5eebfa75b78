import Foundation
import GatewayTestSupport
import XCTest

/// Two `attest-gateway` processes sharing one redis-server refresh each key's receipt once (issue 12):
/// the fleet schedule and the per-key lease. The fake data server holds each exchange for 3 s, so the
/// other process polls while the key is still due and must find the lease taken (`lease_held`).
/// Then `attestctl risk refresh --key-id` forces one more exchange through the same store.
final class ReceiptRefreshFleetTests: XCTestCase, GatewayClient {
    private(set) var port: UInt16 = 0
    private(set) var work: URL = URL(fileURLWithPath: "/tmp")
    private var sharedCAs: TestCAs?
    var cas: TestCAs { sharedCAs! }

    func testTwoGatewaysSharingRedisRefreshEachKeyOnce() throws {
        sharedCAs = try TestCAs.shared()
        work = try E2EPaths.temporaryDirectory("risk-fleet")
        let redis = try RedisServer()
        try redis.start()
        defer { redis.stop() }
        let fake = try FakeDataServer()
        defer { fake.stop() }
        let upstream = try UpstreamProcess()
        defer { upstream.stop() }
        let config = work.appendingPathComponent("gateway.yaml")
        try ReceiptRefreshTests.yaml(fake: fake, upstreamPort: upstream.port, roots: [cas.sim.appendingPathComponent("root.pem").path],
                                     store: redis.url).write(to: config, atomically: true, encoding: .utf8)
        var gateways: [ChildProcess] = []
        defer { for g in gateways { g.stop(signal: SIGKILL, grace: 1) } }
        for _ in 0..<2 {
            let process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path])
            gateways.append(process)
            guard let started = StartedLine.wait(for: process), let port = started.port else {
                throw ChildProcessError.notReady("attest-gateway did not start: \(process.output)")
            }
            if self.port == 0 { self.port = port }
        }

        // Four keys attested through the first gateway; each exchange answers 200 after 3 s.
        var devices: [RiskDevice] = []
        for metric in 1...4 {
            let device = try RiskDevice(caDirectory: cas.sim, appId: ReceiptRefreshTests.appId)
            try fake.set(device.name, status: 200, delay: 3)
            let challenge = try self.challenge(for: device, purpose: "attest")
            let attestation = try device.attestation(challenge: challenge, appId: device.appId, environment: "development", caDirectory: cas.sim)
            XCTAssertEqual(try attest(keyId: device.keyId, challenge: challenge, attestation: attestation).status, 201)
            try fake.set(device.name, status: 200, receipt: try fake.refreshedReceipt(for: device, riskMetric: metric))
            devices.append(device)
        }

        func outcomes(_ process: ChildProcess, _ device: RiskDevice) -> [String] {
            StartedLine.jsonLines(process.output).filter { $0["type"] as? String == "risk_refresh" && $0["keyId"] as? String == device.keyId }
                .compactMap { $0["outcome"] as? String }
        }
        for device in devices {
            waitFor("one gateway refreshed \(device.name), the other found the lease taken", timeout: 40) {
                let a = outcomes(gateways[0], device), b = outcomes(gateways[1], device)
                return (a.contains("refreshed") && b.contains("lease_held")) || (b.contains("refreshed") && a.contains("lease_held"))
            }
            let exchanged = outcomes(gateways[0], device).filter { $0 == "refreshed" }.count + outcomes(gateways[1], device).filter { $0 == "refreshed" }.count
            XCTAssertEqual(exchanged, 1, "\(device.name) exchanged once across the fleet")
            XCTAssertEqual(fake.requests(device.name).count, 1, "\(fake.requests(device.name))")
            let state = try redis.cli("HGET", "aa:{\(device.name)}:key", "riskst").trimmingCharacters(in: .whitespacesAndNewlines)
            XCTAssertEqual(state, "fresh")
        }
        // The next exchange is a day away (the receipt's not-before) in the shared schedule.
        let score = try redis.cli("ZSCORE", "aa:risk:due", devices[0].name).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertGreaterThan(Double(score) ?? 0, Date().timeIntervalSince1970 * 1000 + 3_600_000)

        // attestctl forces one more exchange through the same store (the lease was released).
        try fake.set(devices[0].name, status: 200, receipt: try fake.refreshedReceipt(for: devices[0], riskMetric: 9), delay: 0)
        let forced = try ChildProcess.run(try BuiltProducts.executable("attestctl"),
                                          ["risk", "refresh", "--key-id", devices[0].keyId, "--config", config.path])
        XCTAssertEqual(forced.status, 0, forced.output)
        let report = try XCTUnwrap(StartedLine.jsonLines(forced.output).first)
        XCTAssertEqual(report["outcome"] as? String, "refreshed")
        XCTAssertEqual(report["riskMetric"] as? Int, 9)
        XCTAssertEqual(try redis.cli("HGET", "aa:{\(devices[0].name)}:key", "risk").trimmingCharacters(in: .whitespacesAndNewlines), "9")
        // keys show prints the receipt and the metric.
        let shown = try ChildProcess.run(try BuiltProducts.executable("attestctl"),
                                         ["keys", "show", "--key-id", devices[0].keyId, "--store", redis.url])
        XCTAssertEqual(shown.status, 0, shown.output)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [String: Any], shown.output)
        XCTAssertEqual(json["riskMetric"] as? Int, 9)
        XCTAssertEqual(json["riskState"] as? String, "fresh")
        XCTAssertEqual((json["receipt"] as? [String: Any])?["type"] as? String, "RECEIPT")
        XCTAssertEqual((json["receipt"] as? [String: Any])?["riskMetric"] as? Int, 9)

        // keys list selects by the metric's state: all four are fresh, none is stopped (exit 1: no match).
        let attestctl = try BuiltProducts.executable("attestctl")
        let fresh = try ChildProcess.run(attestctl, ["keys", "list", "--risk-state", "fresh", "--store", redis.url])
        XCTAssertEqual(fresh.status, 0, fresh.output)
        XCTAssertEqual(Set(StartedLine.jsonLines(fresh.output).compactMap { $0["keyId"] as? String }.compactMap { Data(base64Encoded: $0) }),
                       Set(devices.compactMap { Data(base64Encoded: $0.keyId) }))
        let stopped = try ChildProcess.run(attestctl, ["keys", "list", "--risk-state", "stopped", "--store", redis.url])
        XCTAssertEqual(stopped.status, 1, stopped.output)
        XCTAssertEqual(try ChildProcess.run(attestctl, ["keys", "list", "--risk-state", "bad", "--store", redis.url]).status, 2)

        // The store down: exit 3 (as attestctl keys), not 1; a memory store: exit 2 (out of reach).
        let deadPort = FreePort.allocate()
        let down = work.appendingPathComponent("down.yaml")
        try ReceiptRefreshTests.yaml(fake: fake, upstreamPort: upstream.port, roots: [cas.sim.appendingPathComponent("root.pem").path],
                                     store: "redis://127.0.0.1:\(deadPort)/0").write(to: down, atomically: true, encoding: .utf8)
        let unavailable = try ChildProcess.run(attestctl, ["risk", "refresh", "--key-id", devices[0].keyId, "--config", down.path])
        XCTAssertEqual(unavailable.status, 3, unavailable.output)
        XCTAssertEqual(StartedLine.jsonLines(unavailable.output).first?["outcome"] as? String, "store_unavailable")
        let memory = work.appendingPathComponent("memory.yaml")
        try ReceiptRefreshTests.yaml(fake: fake, upstreamPort: upstream.port, roots: [cas.sim.appendingPathComponent("root.pem").path])
            .write(to: memory, atomically: true, encoding: .utf8)
        let unreachable = try ChildProcess.run(attestctl, ["risk", "refresh", "--key-id", devices[0].keyId, "--config", memory.path])
        XCTAssertEqual(unreachable.status, 2, unreachable.output)
        XCTAssertTrue(unreachable.output.contains("memory"), unreachable.output)

        // Failing variant: a key without a record is skipped, exit 1.
        let unknown = try ChildProcess.run(try BuiltProducts.executable("attestctl"),
                                           ["risk", "refresh", "--key-id", Data(repeating: 7, count: 32).base64EncodedString(), "--config", config.path])
        XCTAssertEqual(unknown.status, 1, unknown.output)
        XCTAssertEqual(StartedLine.jsonLines(unknown.output).first?["outcome"] as? String, "skipped")
    }
}
