import Foundation
import XCTest

/// The admin listener: `/healthz`, `/readyz` (Redis up; the Redis-down case is in StoreOutageTests)
/// and `/metrics` counting requests by route, status and verdict.
final class AdminListenerTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }

    var admin: String { "http://127.0.0.1:\(env.adminPort)" }

    func testHealthAndReadiness() throws {
        let health = try Curl.get("\(admin)/healthz")
        XCTAssertEqual(health.status, 200)
        XCTAssertTrue(health.text.contains("ok"), health.text)
        let ready = try Curl.get("\(admin)/readyz")
        XCTAssertEqual(ready.status, 200, ready.text)
        XCTAssertEqual(try Curl.get("\(admin)/nothing").status, 404)
        XCTAssertEqual(try Curl.request(port: env.adminPort, method: "POST", target: "/healthz", body: []).status, 405)
        XCTAssertEqual(try env.send("GET", "/healthz").status, 404, "health is not served on the data listener")
    }

    func testMetricsCountRequests() throws {
        let openKey = "attest_gateway_requests_total{route=\"open\",status=\"200\",verdict=\"none\",protocol=\"h1\",tls=\"none\"}"
        let refusedKey = "attest_gateway_requests_total{route=\"protected\",status=\"401\",verdict=\"missing\",protocol=\"h1\",tls=\"none\"}"
        let before = try metrics()
        for i in 0..<3 { XCTAssertEqual(try env.send("GET", "/v1/open/m?i=\(i)").status, 200) }
        XCTAssertEqual(try env.send("POST", "/v1/protected/m", body: Array("x".utf8)).status, 401)
        var after: [String: Double] = [:]
        eventually {
            after = (try? metrics()) ?? [:]
            return (after[openKey] ?? 0) - (before[openKey] ?? 0) >= 3 && (after[refusedKey] ?? 0) - (before[refusedKey] ?? 0) >= 1
        }
        XCTAssertEqual((after[openKey] ?? 0) - (before[openKey] ?? 0), 3, "three forwarded requests on route open")
        XCTAssertEqual((after[refusedKey] ?? 0) - (before[refusedKey] ?? 0), 1, "one refusal with verdict missing")
        XCTAssertNotNil(after["attest_gateway_request_duration_seconds_count{route=\"open\"}"])
        // HTTP/2 (h2c) requests are counted apart.
        let h2Key = "attest_gateway_requests_total{route=\"open\",status=\"200\",verdict=\"none\",protocol=\"h2\",tls=\"none\"}"
        XCTAssertEqual(try env.send("GET", "/v1/open/h2", via: .h2c).status, 200)
        eventually { ((try? metrics()) ?? [:])[h2Key] != nil }
        XCTAssertEqual((try metrics())[h2Key].map { $0 - (before[h2Key] ?? 0) }, 1)
    }

    /// `/metrics` as sample name (with labels) -> value.
    func metrics() throws -> [String: Double] {
        let reply = try Curl.get("\(admin)/metrics")
        XCTAssertEqual(reply.status, 200)
        var samples: [String: Double] = [:]
        for line in reply.text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        return samples
    }
}
