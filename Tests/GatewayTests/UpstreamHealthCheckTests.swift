import Foundation
@testable import Gateway
import GatewayConfig
import GatewayTestSupport
import XCTest

/// Active health checks with real processes: upstream.py as an always-healthy endpoint and a small
/// Python server whose `/healthz` answers the status the test writes in a file. The checks run on the
/// gateway's event loops; a failing endpoint is marked down (no request reaches it) and up again.
final class UpstreamHealthCheckTests: XCTestCase {
    private var healthy: UpstreamProcess?
    private var toggle: ChildProcess?
    private var runtime: GatewayRuntime?
    private var work: URL?
    private let recorder = EventRecorder()

    override func tearDown() {
        if let runtime {
            let done = DispatchSemaphore(value: 0)
            runtime.shutdown { done.signal() }
            _ = done.wait(timeout: .now() + 10)
        }
        toggle?.stop(signal: SIGKILL, grace: 1)
        healthy?.stop()
        if let work { try? FileManager.default.removeItem(at: work) }
        super.tearDown()
    }

    private static let toggleScript = """
    import http.server, sys, time
    state = sys.argv[1]
    class H(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def do_GET(self):
            code = 200
            if self.path == "/healthz":
                with open(state) as f:
                    text = f.read().strip()
                if text == "slow":
                    time.sleep(1)
                else:
                    code = int(text or "200")
            body = b"toggle"
            self.send_response(code)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("X-Served-By", "toggle")
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *args):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    print("READY", srv.server_address[1], flush=True)
    srv.serve_forever()
    """

    /// Starts both endpoints and the gateway; returns the gateway port and the toggle's state file.
    private func start(check: String = "{path: /healthz, interval: 200ms, timeout: 150ms, healthy_threshold: 2, unhealthy_threshold: 2}") throws -> (UInt16, URL) {
        _ = try ChildProcess.require("python3")  // installed by scripts/setup --tests: missing is a failure
        let dir = try E2EPaths.temporaryDirectory("health")
        work = dir
        let state = dir.appendingPathComponent("status")
        try "200".write(to: state, atomically: true, encoding: .utf8)
        let script = dir.appendingPathComponent("toggle.py")
        try UpstreamHealthCheckTests.toggleScript.write(to: script, atomically: true, encoding: .utf8)
        let process = try ChildProcess("python3", [script.path, state.path])
        toggle = process
        var togglePort: UInt16?
        XCTAssertTrue(eventually {
            togglePort = process.output.split(separator: "\n").first { $0.hasPrefix("READY ") }.flatMap { UInt16($0.dropFirst(6)) }
            return togglePort != nil || !process.isRunning
        })
        let up = try UpstreamProcess()
        healthy = up
        let yaml = """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app:
            endpoints: [http://127.0.0.1:\(up.port), http://127.0.0.1:\(try XCTUnwrap(togglePort, process.output))]
            health_check: \(check)
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        log:
          access: false
        """
        let made = try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: yaml, baseDirectory: dir.path), loopCount: 2,
                                      events: { [recorder] name, _ in recorder.record(name) })
        runtime = made
        return (try XCTUnwrap(made.start().data.first?.port), state)
    }

    private func loggedEvents() -> [String] { recorder.all }

    private func healthFlags() -> [Bool] { (runtime?.upstreamEndpoints("app") ?? []).map(\.healthy) }

    /// Requests that reached the toggle endpoint among `count`.
    private func servedByToggle(_ port: UInt16, count: Int) throws -> Int {
        var n = 0
        for i in 0..<count {
            let reply = try Curl.request(port: port, method: "GET", target: "/h/\(i)")
            XCTAssertEqual(reply.status, 200, "\(reply)")
            if reply.header("X-Served-By") == "toggle" { n += 1 }
        }
        return n
    }

    func testFailingChecksMarkAnEndpointDownAndPassingOnesBringItBack() throws {
        let (port, state) = try start()
        XCTAssertEqual(healthFlags(), [true, true])
        XCTAssertGreaterThan(try servedByToggle(port, count: 10), 0, "both endpoints take requests while healthy")

        try "503".write(to: state, atomically: true, encoding: .utf8)
        XCTAssertTrue(eventually(timeout: 15) { self.healthFlags() == [true, false] }, "marked down: \(healthFlags())")
        XCTAssertEqual(try servedByToggle(port, count: 10), 0, "a down endpoint takes no request")
        XCTAssertTrue(loggedEvents().contains("upstream_endpoint_down"), "\(loggedEvents())")

        try "200".write(to: state, atomically: true, encoding: .utf8)
        XCTAssertTrue(eventually(timeout: 15) { self.healthFlags() == [true, true] }, "marked up again: \(healthFlags())")
        XCTAssertGreaterThan(try servedByToggle(port, count: 10), 0)
        XCTAssertTrue(loggedEvents().contains("upstream_endpoint_up"), "\(loggedEvents())")
    }

    /// A check answered after its timeout fails: a slow endpoint is marked down although it answers 200.
    func testACheckAnsweredAfterTheTimeoutFails() throws {
        let (port, state) = try start()
        try "slow".write(to: state, atomically: true, encoding: .utf8)
        XCTAssertTrue(eventually(timeout: 15) { self.healthFlags() == [true, false] }, "\(healthFlags())")
        XCTAssertEqual(try servedByToggle(port, count: 6), 0)
    }

    /// A dead endpoint (process gone: refused) is marked down by the checks too.
    func testAnEndpointThatStopsAnsweringIsMarkedDown() throws {
        let (port, _) = try start()
        toggle?.stop(signal: SIGKILL, grace: 1)
        XCTAssertTrue(eventually(timeout: 15) { self.healthFlags() == [true, false] }, "\(healthFlags())")
        XCTAssertEqual(try servedByToggle(port, count: 6), 0)
    }
}

/// Lifecycle event names, from the runtime's event sink (any thread).
final class EventRecorder: @unchecked Sendable {  // `names` guarded by `lock`
    private let lock = NSLock()
    private var names: [String] = []
    func record(_ name: String) { lock.lock(); names.append(name); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return names }
}
