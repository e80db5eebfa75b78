import Foundation
import GatewayTestSupport
import XCTest

/// The built `attest-gateway` with a real redis-server that is stopped and restarted: one
/// `store_unavailable` line when the outage starts (with the detail, which `/readyz` never shows),
/// none for the reconnect attempts in between, one `store_recovered` line once every loop is back,
/// and `attest_gateway_store_outages_total` counting it.
final class StoreOutageLogTests: XCTestCase {
    func testOutageAndRecoveryAreLoggedAndCountedOnceEach() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let upstream = try UpstreamProcess()
        defer { upstream.stop() }
        let cas = try TestCAs.shared()
        let work = try E2EPaths.temporaryDirectory("outage-log")
        defer { try? FileManager.default.removeItem(at: work) }
        let dead = try ReservedPort()  // nothing may answer on the dead upstream's port
        defer { withExtendedLifetime(dead) {} }
        let yaml = E2EEnvironment.yaml(store: redis.url, upstreamPort: upstream.port, deadPort: dead.port,
                                       roots: cas.trustedRoots)
        let config = work.appendingPathComponent("gateway.yaml")
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path])
        defer { process.stop(signal: SIGKILL, grace: 1) }
        func lines(_ type: String) -> [[String: Any]] {
            GatewayBinaryTests.jsonLines(process.output).filter { $0["type"] as? String == type }
        }
        let started = StartedLine.wait(for: process)
        let admin = try XCTUnwrap(started?.adminPort, process.output)
        let listen = try XCTUnwrap(started?.port)
        func readiness() -> (ready: Bool, status: String, store: String)? {
            StoreOutageTests.readiness((try? Curl.get("http://127.0.0.1:\(admin)/readyz"))?.text ?? "")
        }
        func outagesTotal() -> String? {
            let text = (try? Curl.get("http://127.0.0.1:\(admin)/metrics"))?.text ?? ""
            return text.split(separator: "\n").first { $0.hasPrefix("attest_gateway_store_outages_total ") }
                .map { String($0.dropFirst("attest_gateway_store_outages_total ".count)) }
        }
        XCTAssertTrue(eventually { readiness()?.store == "ok" }, process.output)
        XCTAssertEqual(outagesTotal(), "0")
        XCTAssertEqual(lines("store_unavailable").count, 0, "no outage while Redis runs: \(process.output)")

        redis.stop()
        XCTAssertTrue(eventually { lines("store_unavailable").count >= 1 }, process.output)
        XCTAssertEqual(readiness()?.store, "unavailable")
        // Keep the outage going through several reconnect attempts (backoff 50 ms doubling up to 2 s)
        // and requests failing fast on both loops: still one line.
        let until = Date().addingTimeInterval(3)
        var refused = 0
        while Date() < until {
            let body = try JSONSerialization.data(withJSONObject: ["keyId": String(repeating: "A", count: 43) + "=", "purpose": "assert"])
            if (try? Curl.request(port: listen, method: "POST", target: "/app-attest/v1/challenge",
                                  headers: [("Content-Type", "application/json")], body: Array(body)))?.status == 503 { refused += 1 }
        }
        XCTAssertGreaterThan(refused, 0, "fail-closed during the outage")
        let unavailable = lines("store_unavailable")
        XCTAssertEqual(unavailable.count, 1, "one line per outage: \(process.output)")
        XCTAssertEqual(unavailable.first?["level"] as? String, "warning")
        XCTAssertFalse((unavailable.first?["detail"] as? String ?? "").isEmpty, "the detail goes to the log: \(unavailable)")
        XCTAssertNotNil(unavailable.first?["connections_down"] as? String)
        XCTAssertEqual(outagesTotal(), "1")
        XCTAssertEqual(lines("store_recovered").count, 0)

        try redis.start()
        XCTAssertTrue(eventually(timeout: 30) { lines("store_recovered").count >= 1 }, process.output)
        XCTAssertEqual(readiness()?.store, "ok")
        let recovered = lines("store_recovered")
        XCTAssertEqual(recovered.count, 1, process.output)
        // Counts and durations are JSON numbers, as in the other lifecycle lines; a recovery is `info`.
        XCTAssertGreaterThan((recovered.first?["connections"] as? NSNumber)?.intValue ?? 0, 0, "\(recovered)")
        XCTAssertNotNil(recovered.first?["duration_ms"] as? NSNumber, "\(recovered)")
        XCTAssertEqual(recovered.first?["level"] as? String, "info", "\(recovered)")
        XCTAssertEqual(lines("store_unavailable").count, 1, "still one outage line")
        XCTAssertEqual(outagesTotal(), "1")
    }
}
