import Foundation
import GatewayTestSupport
import XCTest

/// SIGHUP on the real `attest-gateway` process (DESIGN.md section 10): the configuration is checked
/// like `check-config`, then swapped for new requests while requests in flight finish on the old
/// tables; a bad file keeps the running configuration; restart-only settings are named; TLS
/// listeners take renewed certificates for new handshakes.
final class ConfigReloadTests: XCTestCase {
    private var work: URL!
    private var upstreams: [UpstreamProcess] = []

    override func setUpWithError() throws {
        work = try E2EPaths.temporaryDirectory("reload")
    }

    override func tearDown() {
        for upstream in upstreams { upstream.stop() }
        upstreams = []
        try? FileManager.default.removeItem(at: work)
    }

    private func upstream() throws -> UpstreamProcess {
        let process = try UpstreamProcess()
        upstreams.append(process)
        return process
    }

    /// A configuration with mode-off routes (`routes`: YAML list items), upstreams `one` and `two`.
    static func yaml(listen: String = "127.0.0.1:0", one: UInt16, two: UInt16, routes: String, extra: String = "") -> String {
        """
        listen: \(listen)
        admin: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.e2e
        upstreams:
          one: http://127.0.0.1:\(one)
          two: http://127.0.0.1:\(two)
        routes:
        \(routes)
        timeouts:
          drain: 10s
        log:
          access: true
        \(extra)
        """
    }

    /// Under continuous load: a reload adds a route and moves another to a second upstream; not one
    /// request fails, the new route answers at once, and a slow request on a route the reload
    /// removed finishes on the old tables (its access line names the old route).
    func testReloadUnderLoadSwapsRoutesAndUpstreamsWithoutAFailedRequest() throws {
        let one = try upstream(), two = try upstream()
        let v1 = """
          - name: api
            path_prefix: /api
            upstream: one
            mode: off
          - name: old
            path_prefix: /old
            upstream: one
            mode: off
        """
        let gateway = try ConfiguredGateway(yaml: ConfigReloadTests.yaml(one: one.port, two: two.port, routes: v1), directory: work)
        XCTAssertEqual(try gateway.status("/new/x"), 404, "no route yet")
        let load = try LoadClient(port: gateway.port, paths: ["/api/a", "/api/b?delay=20"], threads: 4, directory: work)

        // A slow request on route `old`, in flight across the reload.
        let slowBody = work.appendingPathComponent("slow").path
        let slow = try ChildProcess("curl", ["-s", "--max-time", "20", "-o", slowBody, "-w", "%{http_code}",
                                             "http://127.0.0.1:\(gateway.port)/old/slow?delay=1500"])
        let before = try one.requestCount()
        waitFor("the slow request reached upstream one") { ((try? one.requestCount()) ?? 0) > before && slow.isRunning }

        let v2 = """
          - name: api
            path_prefix: /api
            upstream: two
            mode: off
          - name: new
            path_prefix: /new
            upstream: one
            mode: off
        """
        try gateway.rewrite(ConfigReloadTests.yaml(one: one.port, two: two.port, routes: v2))
        let reloaded = gateway.reload()
        XCTAssertEqual(reloaded["type"] as? String, "config_reloaded", "\(reloaded)")
        XCTAssertEqual(reloaded["result"] as? String, "success")
        XCTAssertEqual(int(reloaded["generation"]), 2)
        XCTAssertEqual(reloaded["restart_required"] as? [String], [], "nothing restart-only changed")
        XCTAssertTrue(slow.isRunning, "the slow request is still in flight after the swap")

        XCTAssertEqual(try gateway.status("/new/x"), 200, "the new route answers at once")
        XCTAssertEqual(try gateway.status("/old/x"), 404, "the removed route is gone for new requests")
        let twoBefore = try two.requestCount()
        XCTAssertEqual(try gateway.status("/api/moved"), 200)
        XCTAssertGreaterThan(try two.requestCount(), twoBefore, "route api now forwards to upstream two")

        XCTAssertEqual(slow.wait(), 0)
        XCTAssertEqual(slow.output, "200", "the in-flight request finished on the old tables")
        // Keep the load running a little after the reload, then stop it.
        let total = gateway.accessLines.count
        waitFor("more requests after the reload") { gateway.accessLines.count > total + 20 }
        let summary = try load.stop()
        XCTAssertEqual(int(summary["failures"]), 0, "no request failed: \(summary)")
        XCTAssertEqual((summary["statuses"] as? [String: Any])?.keys.sorted(), ["200"], "every answer 200: \(summary)")
        XCTAssertGreaterThan(int(summary["total"]) ?? 0, 20, "\(summary)")

        waitFor("the slow request's access line") {
            gateway.accessLines.contains { $0["path"] as? String == "/old/slow" }
        }
        let slowLine = gateway.accessLines.first { $0["path"] as? String == "/old/slow" }
        XCTAssertEqual(slowLine?["route"] as? String, "old", "logged on the tables it started with")
        XCTAssertEqual(int(slowLine?["status"]), 200)
        XCTAssertEqual(try gateway.metric("attest_gateway_config_reloads_total{result=\"success\"}"), 1)
        XCTAssertEqual(try gateway.metric("attest_gateway_config_reloads_total{result=\"failure\"}"), 0)
    }

    /// A file with errors keeps the running configuration: one `config_reload_failed` line with every
    /// error, its YAML path and line; the failure is counted and the last-success time does not move.
    /// Fixing the file then reloads (the passing variant).
    func testInvalidReloadKeepsServingAndReportsEveryIssueWithItsPath() throws {
        let one = try upstream()
        let good = """
          - name: api
            path_prefix: /api
            upstream: one
            mode: off
        """
        let gateway = try ConfiguredGateway(yaml: ConfigReloadTests.yaml(one: one.port, two: one.port, routes: good), directory: work)
        let startedAt = try XCTUnwrap(try gateway.metric("attest_gateway_config_last_reload_success_timestamp_seconds"))
        let bad = """
          - name: api
            path_prefix: /api
            upstream: one
            mode: off
            max_body: 10MB
          - name: other
            path_prefix: /other
            upstream: nowhere
        """
        try gateway.rewrite(ConfigReloadTests.yaml(one: one.port, two: one.port, routes: bad))
        let failed = gateway.reload()
        XCTAssertEqual(failed["type"] as? String, "config_reload_failed", "\(failed)")
        XCTAssertEqual(failed["level"] as? String, "error")
        XCTAssertEqual(failed["result"] as? String, "failure")
        let errors = failed["errors"] as? [[String: Any]] ?? []
        XCTAssertEqual(Set(errors.compactMap { $0["path"] as? String }), ["routes[0].max_body", "routes[1].upstream"], "\(failed)")
        XCTAssertTrue(errors.allSatisfy { int($0["line"]) != nil && !($0["message"] as? String ?? "").isEmpty }, "\(errors)")
        XCTAssertEqual(int(failed["generation"]), 1, "the running generation stays")

        XCTAssertEqual(try gateway.status("/api/x"), 200, "still serving on the last good configuration")
        XCTAssertEqual(try gateway.status("/other/x"), 404)
        XCTAssertEqual(try gateway.metric("attest_gateway_config_reloads_total{result=\"failure\"}"), 1)
        XCTAssertEqual(try gateway.metric("attest_gateway_config_reloads_total{result=\"success\"}"), 0)
        XCTAssertEqual(try gateway.metric("attest_gateway_config_last_reload_success_timestamp_seconds"), startedAt)

        // A file that does not parse at all is refused the same way.
        try "routes: [unclosed\n".write(to: gateway.config, atomically: true, encoding: .utf8)
        let unparsable = gateway.reload()
        XCTAssertEqual(unparsable["type"] as? String, "config_reload_failed", "\(unparsable)")
        XCTAssertFalse((unparsable["errors"] as? [[String: Any]] ?? []).isEmpty, "\(unparsable)")
        XCTAssertEqual(try gateway.status("/api/x"), 200)

        // Fixed: it reloads.
        usleep(5_000)  // the timestamp has millisecond resolution
        let fixed = good + """

          - name: other
            path_prefix: /other
            upstream: one
            mode: off
        """
        try gateway.rewrite(ConfigReloadTests.yaml(one: one.port, two: one.port, routes: fixed))
        let reloaded = gateway.reload()
        XCTAssertEqual(reloaded["type"] as? String, "config_reloaded", "\(reloaded)")
        XCTAssertEqual(try gateway.status("/other/x"), 200)
        XCTAssertEqual(try gateway.metric("attest_gateway_config_reloads_total{result=\"failure\"}"), 2)
        XCTAssertEqual(try gateway.metric("attest_gateway_config_reloads_total{result=\"success\"}"), 1)
        XCTAssertGreaterThan(try XCTUnwrap(try gateway.metric("attest_gateway_config_last_reload_success_timestamp_seconds")),
                             startedAt)
    }

    /// Settings that need a restart are named in the reload line and not applied (the listener stays
    /// where it is), while the rest of the file takes effect; the same file again reports them again.
    func testRestartOnlyChangesAreNamedAndTheRestApplies() throws {
        let one = try upstream()
        let routes = """
          - name: api
            path_prefix: /api
            upstream: one
            mode: off
        """
        let gateway = try ConfiguredGateway(yaml: ConfigReloadTests.yaml(one: one.port, two: one.port, routes: routes), directory: work)
        let otherPort = FreePort.allocate()
        let moved = routes + """

          - name: extra
            path_prefix: /extra
            upstream: one
            mode: off
        """
        let extra = """
        limits:
          max_connections: 77
        """
        try gateway.rewrite(ConfigReloadTests.yaml(listen: "127.0.0.1:\(otherPort)", one: one.port, two: one.port,
                                                   routes: moved, extra: extra)
                            .replacingOccurrences(of: "store: memory", with: "store:\n  url: memory\n  command_timeout: 700ms"))
        let reloaded = gateway.reload()
        XCTAssertEqual(reloaded["type"] as? String, "config_reloaded", "\(reloaded)")
        XCTAssertEqual(reloaded["level"] as? String, "warning", "a restart is due")
        XCTAssertEqual(reloaded["restart_required"] as? [String],
                       ["listen[0].address", "store.command_timeout", "limits.max_connections"], "\(reloaded)")
        XCTAssertEqual(try gateway.status("/extra/x"), 200, "the reloadable part applied")
        XCTAssertEqual(try Curl.get("http://127.0.0.1:\(otherPort)/extra/x").status, 0, "nothing listens on the new address")

        let again = gateway.reload()
        XCTAssertEqual(again["restart_required"] as? [String],
                       ["listen[0].address", "store.command_timeout", "limits.max_connections"],
                       "still differs from what runs: reported again")

        // Back to the running values: nothing to report. `log.access` reloads too: off, then on again.
        let quiet = ConfigReloadTests.yaml(one: one.port, two: one.port, routes: moved)
        try gateway.rewrite(quiet.replacingOccurrences(of: "access: true", with: "access: false"))
        let clean = gateway.reload()
        XCTAssertEqual(clean["restart_required"] as? [String], [], "\(clean)")
        XCTAssertEqual(clean["level"] as? String, "info")
        XCTAssertEqual(try gateway.status("/api/unlogged"), 200)
        try gateway.rewrite(quiet)
        _ = gateway.reload()
        XCTAssertEqual(try gateway.status("/api/logged"), 200)
        waitFor("the access line of the request after access logging came back") {
            gateway.accessLines.contains { $0["path"] as? String == "/api/logged" }
        }
        XCTAssertFalse(gateway.accessLines.contains { $0["path"] as? String == "/api/unlogged" },
                       "no access line while log.access was false")
    }

    /// Renewed certificate files (same paths, new contents) are read on SIGHUP: new handshakes get
    /// the new certificate (openssl s_client), a connection opened before keeps its session and
    /// serves on. A key that does not match its certificate is refused at its path, and the
    /// listener keeps the certificate it has.
    func testTLSCertificatesReloadForNewHandshakesOnly() throws {
        let one = try upstream()
        let pki = TestPKI.shared
        let chain = work.appendingPathComponent("server.pem"), key = work.appendingPathComponent("server.key")
        func install(_ pair: (chainPath: String, keyPath: String)) throws {
            try Data(contentsOf: URL(fileURLWithPath: pair.chainPath)).write(to: chain, options: .atomic)
            try Data(contentsOf: URL(fileURLWithPath: pair.keyPath)).write(to: key, options: .atomic)
        }
        try install(pki.a)
        let listen = "[{address: \"127.0.0.1:0\", tls: {certificates: [{chain: server.pem, key: server.key}]}}]"
        let routes = """
          - name: api
            path_prefix: /
            upstream: one
            mode: off
        """
        let gateway = try ConfiguredGateway(yaml: ConfigReloadTests.yaml(listen: listen, one: one.port, two: one.port, routes: routes),
                                            directory: work)
        func servedSubject() throws -> String {
            let result = try ChildProcess.run("openssl", ["s_client", "-connect", "127.0.0.1:\(gateway.port)", "-servername", "any.test"],
                                              stdin: Data())
            return result.output.split(separator: "\n").first { $0.hasPrefix("subject=") }.map(String.init) ?? result.output
        }
        let first = try servedSubject()
        XCTAssertTrue(first.contains("a.test"), first)

        // A connection made before the renewal.
        let proceed = work.appendingPathComponent("continue")
        let held = try ChildProcess("python3", [E2EPaths.loadClientScript, "hold", "--port", String(gateway.port),
                                                "--ca", pki.root.certificate, "--continue-file", proceed.path, "--target", "/held"])
        waitFor("the held connection's first answer") { held.output.contains("\"step\": 1") || !held.isRunning }
        XCTAssertTrue(held.output.contains("\"subject\": \"a.test\""), held.output)

        try install(pki.b)
        let reloaded = gateway.reload()
        XCTAssertEqual(reloaded["type"] as? String, "config_reloaded", "\(reloaded)")
        XCTAssertEqual(int(reloaded["tls_listeners_reloaded"]), 1)
        let renewed = try servedSubject()
        XCTAssertTrue(renewed.contains("b.test"), "a new handshake gets the renewed certificate: \(renewed)")

        _ = FileManager.default.createFile(atPath: proceed.path, contents: nil)
        XCTAssertEqual(held.wait(), 0, held.output)
        XCTAssertTrue(held.output.contains("{\"step\": 2, \"status\": 200, \"subject\": \"a.test\"}"),
                      "the connection made before keeps its certificate and serves on: \(held.output)")

        // Failing variant: a key that does not belong to the certificate.
        try Data(contentsOf: URL(fileURLWithPath: pki.a.keyPath)).write(to: key, options: .atomic)
        let refused = gateway.reload()
        XCTAssertEqual(refused["type"] as? String, "config_reload_failed", "\(refused)")
        let paths = (refused["errors"] as? [[String: Any]] ?? []).compactMap { $0["path"] as? String }
        XCTAssertEqual(paths, ["listen[0].tls.certificates[0]"], "\(refused)")
        XCTAssertTrue(try servedSubject().contains("b.test"), "the listener keeps the certificate it had")
    }
}
