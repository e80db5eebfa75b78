import Foundation
import GatewayTestSupport
import XCTest

/// Signals an operator sends to the real `attest-gateway` process, the drain deadline, and the
/// handover to a second process on the same addresses (DESIGN.md section 10, README "Operating it").
final class SignalHandoverTests: XCTestCase {
    private var work: URL!
    private var upstream: UpstreamProcess!

    override func setUpWithError() throws {
        work = try E2EPaths.temporaryDirectory("signals")
        upstream = try UpstreamProcess()
    }

    override func tearDown() {
        upstream?.stop()
        try? FileManager.default.removeItem(at: work)
    }

    private func yaml(listen: String = "127.0.0.1:0", admin: String = "127.0.0.1:0", drain: String = "10s") -> String {
        ConfigReloadTests.yaml(listen: listen, one: upstream.port, two: upstream.port, routes: """
          - name: api
            path_prefix: /
            upstream: one
            mode: off
        """).replacingOccurrences(of: "admin: 127.0.0.1:0", with: "admin: \(admin)")
            .replacingOccurrences(of: "drain: 10s", with: "drain: \(drain)")
    }

    /// HUP, USR1, USR2 and PIPE leave the process running and serving (today's failing variant was
    /// HUP, USR1 and USR2 killing it); USR1 logs that there is nothing to reopen; SIGTERM still
    /// drains and exits 0.
    func testOperatorSignalsDoNotTerminate() throws {
        let gateway = try ConfiguredGateway(yaml: yaml(), directory: work)
        for sig in [SIGHUP, SIGUSR1, SIGUSR2, SIGPIPE, SIGHUP, SIGUSR1] {
            kill(gateway.process.pid, sig)
            XCTAssertEqual(try gateway.status("/after-\(sig)"), 200, "still serving after signal \(sig)")
            XCTAssertTrue(gateway.process.isRunning, "signal \(sig) must not end it: \(gateway.process.output)")
        }
        waitFor("two reload lines and two log_reopen lines") {
            gateway.lines("config_reloaded").count == 2 && gateway.lines("log_reopen").count == 2
        }
        kill(gateway.process.pid, SIGTERM)
        XCTAssertEqual(gateway.process.wait(), 0, "SIGTERM drains and exits 0")
        XCTAssertEqual(int(gateway.lines("stopped").last?["requests_cut"]), 0, gateway.process.output)
    }

    /// A request still in flight when `timeouts.drain` runs out is cut by the gateway: its access
    /// line says so (`cut: drain_deadline`, status 503, not 499) and the `stopped` line counts it.
    /// The contrast: a request that finishes within the drain is logged as it was answered.
    func testRequestCutByTheDrainDeadlineIsLoggedAsCutByTheGateway() throws {
        let gateway = try ConfiguredGateway(yaml: yaml(drain: "2s"), directory: work)
        let before = try upstream.requestCount()
        let quick = try ChildProcess("curl", ["-s", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}",
                                              "http://127.0.0.1:\(gateway.port)/quick?delay=500"])
        let slow = try ChildProcess("curl", ["-s", "--max-time", "20", "-o", "/dev/null", "-w", "%{http_code}",
                                             "http://127.0.0.1:\(gateway.port)/slow?delay=8000"])
        let slowH2 = try ChildProcess("curl", ["-s", "--http2-prior-knowledge", "--max-time", "20", "-o", "/dev/null",
                                               "http://127.0.0.1:\(gateway.port)/slow-h2?delay=8000"])
        waitFor("the three requests reached the upstream") { ((try? self.upstream.requestCount()) ?? 0) >= before + 3 }
        kill(gateway.process.pid, SIGTERM)
        XCTAssertEqual(gateway.process.wait(), 0, gateway.process.output)
        XCTAssertEqual(quick.wait(), 0)
        XCTAssertEqual(quick.output, "200", "finished within the drain")
        _ = slow.wait()
        XCTAssertNotEqual(slow.output, "200", "the slow request did not complete")

        let finished = gateway.accessLines.first { $0["path"] as? String == "/quick" }
        XCTAssertEqual(int(finished?["status"]), 200, "\(String(describing: finished))")
        XCTAssertNil(finished?["cut"])
        let cut = gateway.accessLines.first { $0["path"] as? String == "/slow" }
        XCTAssertEqual(cut?["cut"] as? String, "drain_deadline", "\(String(describing: cut))")
        XCTAssertEqual(int(cut?["status"]), 503, "cut by the gateway, not a client that closed (499)")
        XCTAssertEqual(cut?["aborted"] as? Bool, true)
        _ = slowH2.wait()
        let cutStream = gateway.accessLines.first { $0["path"] as? String == "/slow-h2" }
        XCTAssertEqual(cutStream?["proto"] as? String, "h2")
        XCTAssertEqual(cutStream?["cut"] as? String, "drain_deadline", "an HTTP/2 stream too: \(String(describing: cutStream))")
        XCTAssertEqual(int(cutStream?["status"]), 503)
        let stopped = gateway.lines("stopped").last
        XCTAssertEqual(int(stopped?["requests_cut"]), 2, gateway.process.output)
        XCTAssertEqual(stopped?["reason"] as? String, "drain deadline")
    }

    /// Zero-downtime upgrade under load: gateway A serves a continuous client loop; gateway B starts
    /// on the same address (SO_REUSEPORT); A gets SIGTERM and exits; not one request failed, and B
    /// served requests both before and after A left. (The kernel side, steering new connections to
    /// B once A drains, is checked in `ReusePortSteeringTests`.)
    func testHandoverToASecondProcessUnderLoadLosesNoRequest() throws {
        let port = FreePort.allocate()
        let upstreamB = try UpstreamProcess()
        defer { upstreamB.stop() }
        let a = try ConfiguredGateway(yaml: yaml(listen: "127.0.0.1:\(port)"), directory: work, name: "a.yaml")
        let threads = 6
        let load = try LoadClient(port: port, paths: ["/a", "/b?delay=5"], threads: threads, directory: work)
        let b = try ConfiguredGateway(yaml: yaml(listen: "127.0.0.1:\(port)")
                                        .replacingOccurrences(of: "127.0.0.1:\(upstream.port)", with: "127.0.0.1:\(upstreamB.port)"),
                                      directory: work, name: "b.yaml")
        XCTAssertEqual(b.port, port)
        waitFor("B serves some of the load", timeout: 15) { ((try? upstreamB.requestCount()) ?? 0) >= 20 }

        let forwardedByA = try upstream.requestCount()
        XCTAssertGreaterThan(forwardedByA, 0)
        kill(a.process.pid, SIGTERM)
        XCTAssertEqual(a.process.wait(), 0, a.process.output)
        XCTAssertEqual(int(a.lines("stopped").last?["requests_cut"]), 0)
        let servedByBAtHandover = try upstreamB.requestCount()
        waitFor("B carries the load alone", timeout: 15) { ((try? upstreamB.requestCount()) ?? 0) >= servedByBAtHandover + 50 }

        let summary = try load.stop()
        XCTAssertEqual(int(summary["failures"]), 0, "no request failed during the handover: \(summary)")
        XCTAssertEqual((summary["statuses"] as? [String: Any])?.keys.sorted(), ["200"], "\(summary)")
        waitFor("every request answered by A or B is logged") {
            int(summary["total"]) == a.accessLines.count + b.accessLines.count
        }
        kill(b.process.pid, SIGTERM)
        XCTAssertEqual(b.process.wait(), 0)
    }

    /// A second instance never deletes a live Unix socket: it refuses to start with a clear error
    /// and the first keeps serving on it. A stale socket file (its process was killed) is replaced.
    func testASecondInstanceNeverDeletesALiveUnixSocket() throws {
        let socket = work.appendingPathComponent("gw.sock").path
        let config = yaml(listen: "[\"unix:\(socket)\", 127.0.0.1:0]")
        let first = try ConfiguredGateway(yaml: config, directory: work, name: "first.yaml")
        func viaSocket() throws -> String {
            try ChildProcess.run("curl", ["-s", "--max-time", "5", "--unix-socket", socket, "-o", "/dev/null", "-w", "%{http_code}",
                                          "http://localhost/over-socket"]).output
        }
        XCTAssertEqual(try viaSocket(), "200")

        let second = try ChildProcess.run(try E2EPaths.gatewayBinary(), ["--config", first.config.path])
        XCTAssertEqual(second.status, 1, second.output)
        XCTAssertTrue(second.output.contains("another process is listening on it"), second.output)
        XCTAssertTrue(second.output.contains(socket), second.output)
        XCTAssertEqual(try viaSocket(), "200", "the first instance still serves on its socket")
        XCTAssertTrue(first.process.isRunning)

        // Stale: the first instance dies without removing its socket file; a new one replaces it.
        first.process.stop(signal: SIGKILL, grace: 1)
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket), "SIGKILL leaves the file behind")
        let third = try ConfiguredGateway(yaml: config, directory: work, name: "third.yaml")
        XCTAssertEqual(try viaSocket(), "200", "the stale file was replaced")
        kill(third.process.pid, SIGTERM)
        XCTAssertEqual(third.process.wait(), 0)
        XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "a clean stop removes its own socket")
    }
}
