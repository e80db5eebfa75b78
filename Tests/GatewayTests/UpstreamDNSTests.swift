import Foundation
import GatewayTestSupport
import XCTest

/// Upstream DNS names with real processes: the built gateway runs in a mount namespace of its own
/// (`unshare -m`) whose /etc/hosts and /etc/resolv.conf are files the test writes, so a name can
/// start unresolvable, appear and move while the gateway runs. check-config and the daemon agree: a
/// name that does not resolve is a warning, the daemon starts, answers 503 upstream_unresolved and
/// keeps resolving in the background (off the event loops).
final class UpstreamDNSTests: XCTestCase {
    private var work: URL!
    private var hosts: URL!
    private var resolv: URL!
    private var upstream: UpstreamProcess?
    private var gateway: ChildProcess?

    override func setUpWithError() throws {
        try super.setUpWithError()
        _ = try ChildProcess.require("unshare")  // installed by scripts/setup --tests: missing is a failure
        let probe = try ChildProcess.run("unshare", ["-m", "true"])
        // Precisely the missing feature: this machine does not let the tests make a mount namespace.
        guard probe.status == 0 else { throw XCTSkip("mount namespaces are not permitted here (unshare -m: \(probe.output))") }
        work = try E2EPaths.temporaryDirectory("dns")
        hosts = work.appendingPathComponent("hosts")
        resolv = work.appendingPathComponent("resolv.conf")
        _ = FileManager.default.createFile(atPath: hosts.path, contents: nil)
        try writeHosts("127.0.0.1 localhost\n")
        // No real DNS: a name absent from the hosts file fails at once (nothing answers on port 53).
        try "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n".write(to: resolv, atomically: false, encoding: .utf8)
    }

    override func tearDown() {
        gateway?.stop(signal: SIGKILL, grace: 1)
        upstream?.stop()
        if let work { try? FileManager.default.removeItem(at: work) }
        super.tearDown()
    }

    /// Rewrites the hosts file in place (the bind mount follows the file, not its name).
    private func writeHosts(_ text: String) throws {
        let handle = try FileHandle(forWritingTo: hosts ?? URL(fileURLWithPath: "/dev/null"))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(text.utf8))
        try handle.close()
    }

    /// `arguments` run by the built gateway inside the namespace.
    private func isolated(_ arguments: [String]) throws -> [String] {
        ["-m", "sh", "-c", "mount --bind \"$1\" /etc/hosts && mount --bind \"$2\" /etc/resolv.conf && shift 2 && exec \"$@\"",
         "sh", hosts.path, resolv.path, try E2EPaths.gatewayBinary()] + arguments
    }

    private func config(_ upstream: String) throws -> String {
        let file = work.appendingPathComponent("gateway.yaml")
        try """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app:
        \(upstream)
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        log:
          access: false
        """.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// Starts the gateway in the namespace and returns its data port.
    private func startGateway(_ configPath: String) throws -> UInt16 {
        let process = try ChildProcess("unshare", try isolated(["--config", configPath]))
        gateway = process
        return try XCTUnwrap(StartedLine.wait(for: process)?.port, "the gateway did not start: \(process.output)")
    }

    private func events(_ type: String) -> [[String: Any]] {
        GatewayBinaryTests.jsonLines(gateway?.output ?? "").filter { $0["type"] as? String == type }
    }

    func testCheckConfigWarnsAboutANameThatDoesNotResolveAndExitsZero() throws {
        let path = try config("    endpoints: [http://app.gw-test:8080, http://127.0.0.1:9]")
        let result = try ChildProcess.run("unshare", try isolated(["check-config", path]))
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("warning: upstreams.app: app.gw-test does not resolve now"), result.output)
        try writeHosts("127.0.0.1 app.gw-test\n")
        let resolved = try ChildProcess.run("unshare", try isolated(["check-config", path]))
        XCTAssertEqual(resolved.status, 0, resolved.output)
        XCTAssertFalse(resolved.output.contains("does not resolve"), resolved.output)
    }

    /// Unresolvable at start: the daemon starts (no crash loop), logs a warning, answers 503
    /// upstream_unresolved; once the name appears it is picked up in the background and requests
    /// reach the upstream.
    func testUnresolvableAtStartAnswers503ThenRecoversWhenTheNameAppears() throws {
        let up = try UpstreamProcess()
        upstream = up
        let port = try startGateway(try config("    endpoints: [http://app.gw-test:\(up.port)]\n    dns_refresh: 1s"))
        let unresolved = try Curl.request(port: port, method: "GET", target: "/x")
        XCTAssertEqual(unresolved.status, 503, "\(unresolved)")
        XCTAssertEqual(unresolved.errorCode, "upstream_unresolved")
        XCTAssertEqual(unresolved.header("Retry-After"), "1")
        XCTAssertEqual(events("upstream_unresolved").first?["level"] as? String, "warning", gateway?.output ?? "")
        XCTAssertTrue(gateway?.isRunning ?? false)

        try writeHosts("127.0.0.1 app.gw-test\n")
        XCTAssertTrue(eventually(timeout: 20) { (try? Curl.request(port: port, method: "GET", target: "/x").status) == 200 },
                      "picked up in the background: \(gateway?.output ?? "")")
        XCTAssertFalse(events("upstream_resolved").isEmpty, gateway?.output ?? "")
    }

    /// A name that moves while running is followed (every dns_refresh): to an address where nothing
    /// listens (502), and back (200). Responses close their connections so no pooled connection to
    /// the old address hides the change.
    func testNameIsResolvedAgainWhileRunning() throws {
        let up = try UpstreamProcess()
        upstream = up
        try writeHosts("127.0.0.1 app.gw-test\n")
        let port = try startGateway(try config("    endpoints: [http://app.gw-test:\(up.port)]\n    dns_refresh: 1s"))
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x?close=1").status, 200)
        try writeHosts("127.0.0.3 app.gw-test\n")
        XCTAssertTrue(eventually(timeout: 20) { (try? Curl.request(port: port, method: "GET", target: "/x?close=1").status) == 502 },
                      "the new address (nothing listens there) is used")
        XCTAssertFalse(events("upstream_dns_changed").isEmpty, gateway?.output ?? "")
        try writeHosts("127.0.0.1 app.gw-test\n")
        XCTAssertTrue(eventually(timeout: 20) { (try? Curl.request(port: port, method: "GET", target: "/x?close=1").status) == 200 })
    }

    /// A name that stops resolving keeps its last addresses: requests go on.
    func testANameThatStopsResolvingKeepsItsLastAddresses() throws {
        let up = try UpstreamProcess()
        upstream = up
        try writeHosts("127.0.0.1 app.gw-test\n")
        let port = try startGateway(try config("    endpoints: [http://app.gw-test:\(up.port)]\n    dns_refresh: 1s"))
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x?close=1").status, 200)
        try writeHosts("127.0.0.1 localhost\n")
        XCTAssertTrue(eventually(timeout: 20) { !self.events("upstream_unresolved").isEmpty }, gateway?.output ?? "")
        XCTAssertEqual(try Curl.request(port: port, method: "GET", target: "/x?close=1").status, 200)
    }
}
