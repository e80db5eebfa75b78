import Foundation
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The README's "Running it" promises about the process, tested on the built `attest-gateway` binary
/// with stdout and stderr read separately:
/// - SIGTERM and SIGINT stop accepting, turn `/healthz` and `/readyz` to 503, let in-flight requests
///   finish within `timeouts.drain`, then exit 0; a request past the drain limit is cut; a second
///   signal exits at once;
/// - access lines on standard output, lifecycle events (`started`, `config_warning`, `store_warning`,
///   `draining`, `stopped`) on standard error only;
/// - a Redis whose `maxmemory-policy` is not `noeviction` draws a `store_warning` at start-up.
///
/// Hangs are bounded and fail (`waitForExit`), never skip. The upstream delays are far from the
/// drain limits (seconds against tens of seconds), so no test races a timer.
final class LifecyclePromiseTests: XCTestCase {
    /// `attest-gateway --config FILE` as a child process, stdout and stderr apart, with the port it
    /// announced in its `started` line (it binds port 0) and a check that the announcing process is
    /// the one this test started.
    final class GatewayProcess: GatewayClient {
        let process: ChildProcess
        let upstream: UpstreamProcess
        let work: URL
        let cas: TestCAs
        let port: UInt16
        let adminPort: UInt16
        /// The `down` upstream's port: bound, never listening, held while the gateway runs.
        let dead: ReservedPort

        /// `standardOutput`: a path the gateway's standard output is redirected to (a FIFO nobody reads,
        /// say) instead of the pipe the test reads.
        init(store: String = "memory", access: Bool = false, drain: String = "10s", tls: Bool = false,
             standardOutput: String? = nil) throws {
            cas = try TestCAs.shared()
            work = try E2EPaths.temporaryDirectory("lifecycle")
            upstream = try UpstreamProcess()
            dead = try ReservedPort()
            var listen = "127.0.0.1:0"
            if tls {
                let certificate = TestPKI.shared.address
                listen = "[{address: \"127.0.0.1:0\", tls: {certificates: [{chain: \"\(certificate.chainPath)\", key: \"\(certificate.keyPath)\"}]}}]"
            }
            var yaml = E2EEnvironment.yaml(store: store, upstreamPort: upstream.port, deadPort: dead.port,
                                           roots: cas.trustedRoots, access: access, listen: listen)
            yaml = yaml.replacingOccurrences(of: "  drain: 5s\n", with: "  drain: \(drain)\n")
            XCTAssertTrue(yaml.contains("  drain: \(drain)\n"))

            let config = work.appendingPathComponent("gateway.yaml")
            try yaml.write(to: config, atomically: true, encoding: .utf8)
            if let standardOutput {
                // `exec`: the shell becomes the gateway (same pid, checked below), stdout redirected.
                process = try ChildProcess("/bin/sh", ["-c", "exec \"$0\" --config \"$1\" > \"$2\"",
                                                       try E2EPaths.gatewayBinary(), config.path, standardOutput],
                                           separateStandardError: true)
            } else {
                process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path], separateStandardError: true)
            }
            guard let started = StartedLine.wait(for: process, output: { $0.errorOutput }), let port = started.port,
                  let adminPort = started.adminPort else {
                throw SetupFailure("attest-gateway did not start: \(process.output)\n\(process.errorOutput)")
            }
            guard started.pid == String(process.pid) else {
                throw SetupFailure("the started line comes from pid \(started.pid ?? "?"), not from the child \(process.pid)")
            }
            self.port = port
            self.adminPort = adminPort
        }

        /// A GET on the admin listener (status 0 when nothing answers).
        func admin(_ path: String) throws -> Int { try Curl.get("http://127.0.0.1:\(adminPort)\(path)").status }

        /// A request through the gateway, in the background (curl): `delay` ms at the upstream.
        func slowRequest(delay: Int) throws -> ChildProcess {
            let before = try upstream.requestCount()
            let client = try ChildProcess("curl", ["-s", "--max-time", "60", "-o", "/dev/null", "-w", "%{http_code}",
                                                   "http://127.0.0.1:\(port)/v1/open/slow?delay=\(delay)"])
            XCTAssertTrue(eventually { (try? upstream.requestCount()) ?? before > before }, "the slow request reached the upstream")
            XCTAssertTrue(client.isRunning, "the slow request is in flight")
            return client
        }

        /// Stops the child (SIGKILL when still running) and its upstream.
        func kill() {
            process.stop(signal: SIGKILL, grace: 1)
            upstream.stop()
        }

        deinit {
            kill()
            try? FileManager.default.removeItem(at: work)
        }
    }

    /// The JSON lines of `text`.
    static func events(_ text: String) -> [[String: Any]] { StartedLine.jsonLines(text) }

    /// The `type`s of the JSON lines of `text`, in order.
    static func types(_ text: String) -> [String] { events(text).compactMap { $0["type"] as? String } }

    /// The child's exit status, failing the test (and killing the child) when it does not exit within
    /// `timeout` seconds: a hang is red.
    func exitStatus(_ gateway: GatewayProcess, within timeout: TimeInterval, _ what: String,
                    file: StaticString = #filePath, line: UInt = #line) -> Int32? {
        guard let status = gateway.process.waitForExit(timeout: timeout) else {
            XCTFail("attest-gateway did not exit within \(timeout) s \(what)", file: file, line: line)
            gateway.kill()
            return nil
        }
        return status
    }

    /// One signal while a request is in flight: health and readiness answer 503, the request completes,
    /// the process exits 0 after `stopped`.
    private func assertDrains(on signal: Int32, name: String) throws {
        let gateway = try GatewayProcess()
        XCTAssertEqual(try gateway.admin("/healthz"), 200, "healthy before the signal")
        XCTAssertEqual(try gateway.admin("/readyz"), 200, "ready before the signal")
        let client = try gateway.slowRequest(delay: 4000)
        Glibc.kill(gateway.process.pid, signal)
        XCTAssertTrue(eventually { LifecyclePromiseTests.types(gateway.process.errorOutput).contains("draining") },
                      "a draining event: \(gateway.process.errorOutput)")
        // The admin listener stays up until the in-flight request is done, answering 503.
        XCTAssertEqual(try gateway.admin("/healthz"), 503, "/healthz while draining")
        XCTAssertEqual(try gateway.admin("/readyz"), 503, "/readyz while draining")
        // The data listener closes after the handover settle (0.5 s: connections already on their way
        // are still taken, each served once with `Connection: close`), well before the request ends.
        XCTAssertTrue(try eventually(timeout: 3) {
            try Curl.request(port: gateway.port, method: "GET", target: "/v1/open/late").status == 0
        }, "the data listener no longer accepts once the handover settle is over")
        XCTAssertEqual(client.waitForExit(timeout: 30), 0)
        XCTAssertEqual(client.output, "200", "the in-flight request completed")
        XCTAssertEqual(exitStatus(gateway, within: 30, "after draining"), 0)
        let events = LifecyclePromiseTests.events(gateway.process.errorOutput)
        let draining = events.first { $0["type"] as? String == "draining" }
        XCTAssertEqual(draining?["signal"] as? String, name, gateway.process.errorOutput)
        XCTAssertEqual(events.last?["type"] as? String, "stopped", gateway.process.errorOutput)
        XCTAssertEqual(events.last?["reason"] as? String, "drained", gateway.process.errorOutput)
    }

    func testSIGTERMTurnsHealthAndReadinessTo503AndDrains() throws {
        try assertDrains(on: SIGTERM, name: "SIGTERM")
    }

    func testSIGINTDrainsLikeSIGTERM() throws {
        try assertDrains(on: SIGINT, name: "SIGINT")
    }

    /// A second signal exits at once, abandoning the request still in flight; the first one alone
    /// would have waited for it (drain 60 s, the upstream answers after 30 s).
    func testASecondSignalExitsAtOnce() throws {
        let gateway = try GatewayProcess(drain: "60s")
        let client = try gateway.slowRequest(delay: 30_000)
        Glibc.kill(gateway.process.pid, SIGTERM)
        XCTAssertTrue(eventually { (try? gateway.admin("/healthz")) == 503 }, "draining after the first signal")
        XCTAssertTrue(gateway.process.isRunning, "the first signal waits for the in-flight request")
        Glibc.kill(gateway.process.pid, SIGTERM)
        let status = exitStatus(gateway, within: 15, "after the second signal")
        XCTAssertNotNil(status)
        XCTAssertNotEqual(status, 0, "the second signal does not finish the drain")
        let stopped = LifecyclePromiseTests.events(gateway.process.errorOutput).last { $0["type"] as? String == "stopped" }
        XCTAssertEqual(stopped?["reason"] as? String, "second signal", gateway.process.errorOutput)
        XCTAssertNotNil(client.waitForExit(timeout: 30), "curl saw the connection end")
        XCTAssertEqual(client.output, "000", "the abandoned request got no answer")
    }

    /// `timeouts.drain` bounds the drain: a request still running when it ends is cut and the process
    /// exits 0 (drain 1 s; the upstream would answer after 30 s).
    /// Standard output read by nobody (a stalled journald or log driver: a FIFO held open, never
    /// read): SIGUSR1 answers at once and the signals after it still work; SIGTERM drains and the
    /// process exits 0 (the final flush waits at most 2 s), its `stopped` line saying the access log
    /// was left unflushed. Before, SIGUSR1 and SIGTERM both waited on the stuck write forever (probe:
    /// only SIGKILL ended the process).
    func testAStalledStandardOutputNeverBlocksTheSignalsOrTheExit() throws {
        let fifoDirectory = try E2EPaths.temporaryDirectory("stuck-stdout")
        defer { try? FileManager.default.removeItem(at: fifoDirectory) }
        let fifo = fifoDirectory.appendingPathComponent("stdout").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)  // held open, never read
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        let gateway = try GatewayProcess(access: true, standardOutput: fifo)
        // About 600 KB of access lines: far more than the 64 KiB the pipe holds.
        let load = try ChildProcess("python3", ["-c", """
            import http.client, sys
            c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=10)
            for i in range(2000):
                c.request("GET", "/v1/open/fill?n=%d" % i, headers={"User-Agent": "x" * 200})
                c.getresponse().read()
            print("done")
            """, String(gateway.port)])
        XCTAssertEqual(load.waitForExit(timeout: 60), 0, load.output)
        XCTAssertEqual(load.output.trimmingCharacters(in: .whitespacesAndNewlines), "done")

        Glibc.kill(gateway.process.pid, SIGUSR1)
        XCTAssertTrue(eventually(timeout: 10) { LifecyclePromiseTests.types(gateway.process.errorOutput).contains("log_reopen") },
                      "SIGUSR1 answered: \(gateway.process.errorOutput)")
        Glibc.kill(gateway.process.pid, SIGTERM)
        XCTAssertEqual(exitStatus(gateway, within: 30, "with its standard output stalled"), 0)
        let events = LifecyclePromiseTests.events(gateway.process.errorOutput)
        XCTAssertEqual(events.last?["type"] as? String, "stopped", gateway.process.errorOutput)
        XCTAssertEqual(events.last?["reason"] as? String, "drained", gateway.process.errorOutput)
        XCTAssertEqual(events.last?["access_log"] as? String, "unflushed", gateway.process.errorOutput)
    }

    /// Standard error read by nobody once the gateway runs (a stalled journald: a FIFO held open,
    /// read only until the `started` line): the lifecycle lines (`log_reopen` here) fill the pipe,
    /// and the signal handlers still run: SIGTERM drains and the process exits 0. Before, the main
    /// queue blocked in `write(2)` on the full pipe and no signal was handled again.
    func testAStalledStandardErrorNeverBlocksTheSignals() throws {
        let cas = try TestCAs.shared()
        let work = try E2EPaths.temporaryDirectory("stuck-stderr")
        defer { try? FileManager.default.removeItem(at: work) }
        let upstream = try UpstreamProcess()
        defer { upstream.stop() }
        let dead = try ReservedPort()
        let config = work.appendingPathComponent("gateway.yaml")
        try E2EEnvironment.yaml(store: "memory", upstreamPort: upstream.port, deadPort: dead.port, roots: cas.trustedRoots,
                                access: false, listen: "127.0.0.1:0").write(to: config, atomically: true, encoding: .utf8)
        let fifo = work.appendingPathComponent("stderr").path
        XCTAssertEqual(mkfifo(fifo, 0o600), 0)
        let reader = open(fifo, O_RDONLY | O_NONBLOCK)
        XCTAssertGreaterThanOrEqual(reader, 0)
        defer { close(reader) }
        let process = try ChildProcess("/bin/sh", ["-c", "exec \"$0\" --config \"$1\" 2> \"$2\"",
                                                   try E2EPaths.gatewayBinary(), config.path, fifo])
        defer { process.stop(signal: SIGKILL, grace: 1) }
        // Read standard error only until the `started` line.
        var seen = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        let startDeadline = Date().addingTimeInterval(20)
        while !String(decoding: seen, as: UTF8.self).contains("\"type\":\"started\"") && Date() < startDeadline {
            let n = read(reader, &buffer, buffer.count)
            if n > 0 { seen += buffer[0..<n] } else { usleep(10_000) }
        }
        XCTAssertTrue(String(decoding: seen, as: UTF8.self).contains("\"type\":\"started\""), String(decoding: seen, as: UTF8.self))
        // Fill the pipe nobody reads any more with log_reopen lines, then some more.
        func unread() -> Int32 {
            var count: Int32 = 0
            _ = ioctl(reader, UInt(FIONREAD), &count)
            return count
        }
        let fillDeadline = Date().addingTimeInterval(30)
        while unread() < 65_536 - 1_024 && Date() < fillDeadline && process.isRunning {
            Glibc.kill(process.pid, SIGUSR1)
            usleep(1_000)
        }
        XCTAssertGreaterThanOrEqual(unread(), 65_536 - 1_024, "the pipe filled up (a log_reopen line is about 250 bytes)")
        for _ in 0..<50 {
            Glibc.kill(process.pid, SIGUSR1)
            usleep(1_000)
        }
        Glibc.kill(process.pid, SIGTERM)
        XCTAssertEqual(process.waitForExit(timeout: 30), 0, "SIGTERM was handled with standard error stalled")
    }

    func testTheDrainLimitCutsRequestsStillRunning() throws {
        let gateway = try GatewayProcess(drain: "1s")
        let client = try gateway.slowRequest(delay: 30_000)
        Glibc.kill(gateway.process.pid, SIGTERM)
        XCTAssertEqual(exitStatus(gateway, within: 20, "after the 1 s drain limit"), 0)
        let stopped = LifecyclePromiseTests.events(gateway.process.errorOutput).last { $0["type"] as? String == "stopped" }
        // "drain deadline" once the gateway names requests it cut (issue 9), "drained" before.
        XCTAssertTrue(["drained", "drain deadline"].contains(stopped?["reason"] as? String ?? ""), gateway.process.errorOutput)
        XCTAssertNotNil(client.waitForExit(timeout: 30), "curl saw the connection end")
        XCTAssertEqual(client.output, "000", "the request past the drain limit was cut, no answer")
    }

    /// Access lines on stdout only, lifecycle events on stderr only (the streams read apart).
    func testLifecycleEventsOnStandardErrorAccessLinesOnStandardOutput() throws {
        let gateway = try GatewayProcess(access: true)
        XCTAssertEqual(try gateway.send("GET", "/v1/open/x").status, 200)
        XCTAssertEqual(try gateway.send("GET", "/nowhere").status, 404)
        Glibc.kill(gateway.process.pid, SIGTERM)
        XCTAssertEqual(exitStatus(gateway, within: 30, "after SIGTERM"), 0)
        let stdout = LifecyclePromiseTests.types(gateway.process.output)
        let stderr = LifecyclePromiseTests.types(gateway.process.errorOutput)
        XCTAssertEqual(stdout, ["access", "access"], "stdout: \(gateway.process.output)")
        for line in gateway.process.output.split(separator: "\n") {
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.utf8)), "stdout holds JSON lines only: \(line)")
        }
        XCTAssertEqual(stderr.first, "config_warning", "the memory store draws a warning: \(gateway.process.errorOutput)")
        XCTAssertTrue(stderr.contains("started"), gateway.process.errorOutput)
        XCTAssertEqual(Array(stderr.suffix(2)), ["draining", "stopped"], gateway.process.errorOutput)
        XCTAssertFalse(stderr.contains("access"), "no access line on stderr: \(gateway.process.errorOutput)")
        for event in LifecyclePromiseTests.events(gateway.process.errorOutput) {
            XCTAssertNotNil(event["level"] as? String, "every event has a level: \(event)")
        }
    }

    /// `maxmemory-policy` other than `noeviction`: a `store_warning` on stderr naming the policy; with
    /// `noeviction`, none.
    func testStoreWarningWhenRedisMayEvictKeys() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        XCTAssertEqual(try redis.cli("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"), "OK")
        let evicting = try GatewayProcess(store: redis.url)
        XCTAssertTrue(eventually { LifecyclePromiseTests.types(evicting.process.errorOutput).contains("store_warning") },
                      "a store_warning: \(evicting.process.errorOutput)")
        let warning = LifecyclePromiseTests.events(evicting.process.errorOutput).first { $0["type"] as? String == "store_warning" }
        XCTAssertEqual(warning?["level"] as? String, "warning")
        XCTAssertTrue((warning?["detail"] as? String)?.contains("allkeys-lru") ?? false, "\(warning ?? [:])")
        XCTAssertFalse(LifecyclePromiseTests.types(evicting.process.output).contains("store_warning"), "not on stdout")
        evicting.kill()

        XCTAssertEqual(try redis.cli("CONFIG", "SET", "maxmemory-policy", "noeviction"), "OK")
        let safe = try GatewayProcess(store: redis.url)
        XCTAssertTrue(eventually { (try? safe.admin("/readyz")) == 200 }, "ready once Redis answers")
        Glibc.kill(safe.process.pid, SIGTERM)
        XCTAssertEqual(exitStatus(safe, within: 30, "after SIGTERM"), 0)
        XCTAssertFalse(LifecyclePromiseTests.types(safe.process.errorOutput).contains("store_warning"), safe.process.errorOutput)
    }

    /// `log.level: warning` writes only warnings (`config_warning`), not the info events (`started`,
    /// `draining`, `stopped`); `log.access: false` writes no access line. Without a `started` line the
    /// ports are unknown, so the gateway listens on Unix sockets here and is polled until it answers.
    func testLogLevelWarningAndAccessFalse() throws {
        let cas = try TestCAs.shared()
        let upstream = try UpstreamProcess()
        defer { upstream.stop() }
        let dead = try ReservedPort()
        let work = URL(fileURLWithPath: "/tmp").appendingPathComponent("gw-level-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let data = work.appendingPathComponent("gw.sock").path, admin = work.appendingPathComponent("admin.sock").path
        var yaml = E2EEnvironment.yaml(store: "memory", upstreamPort: upstream.port, deadPort: dead.port, roots: cas.trustedRoots,
                                       access: false, listen: "\"unix:\(data)\"", admin: "\"unix:\(admin)\"")
        yaml = yaml.replacingOccurrences(of: "  access: false\n", with: "  access: false\n  level: warning\n")
        XCTAssertTrue(yaml.contains("  level: warning\n"), yaml)
        let config = work.appendingPathComponent("gateway.yaml")
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path], separateStandardError: true)
        defer { process.stop(signal: SIGKILL, grace: 1) }
        func get(_ socket: String, _ path: String) -> String {
            (try? ChildProcess.run("curl", ["-s", "--max-time", "5", "--unix-socket", socket, "-o", "/dev/null", "-w", "%{http_code}",
                                            "http://localhost\(path)"]).output) ?? ""
        }
        XCTAssertTrue(eventually { get(admin, "/healthz") == "200" || !process.isRunning }, "the admin socket answers")
        XCTAssertEqual(get(admin, "/healthz"), "200", process.errorOutput)
        XCTAssertEqual(get(data, "/v1/open/x"), "200")
        XCTAssertEqual(get(data, "/nowhere"), "404")
        Glibc.kill(process.pid, SIGTERM)
        XCTAssertEqual(process.waitForExit(timeout: 30), 0, process.errorOutput)
        let stderr = LifecyclePromiseTests.types(process.errorOutput)
        XCTAssertTrue(stderr.contains("config_warning"), "warnings are written: \(process.errorOutput)")
        XCTAssertEqual(Set(stderr), ["config_warning"], "no info event at level warning: \(process.errorOutput)")
        XCTAssertEqual(process.output, "", "access: false writes nothing on stdout")
    }

    /// Access lines carry `proto` (`h1`, `h2`) and, on TLS connections only, `tls` (the version).
    func testAccessLinesCarryProtocolAndTLSVersion() throws {
        let gateway = try GatewayProcess(access: true, tls: true)
        let ca = TestPKI.shared.root.certificate
        XCTAssertEqual(try gateway.send("GET", "/v1/open/tls-h1", via: .http1TLS(ca: ca)).status, 200)
        XCTAssertEqual(try gateway.send("GET", "/v1/open/tls-h2", via: .h2TLS(ca: ca)).status, 200)
        Glibc.kill(gateway.process.pid, SIGTERM)
        XCTAssertEqual(exitStatus(gateway, within: 30, "after SIGTERM"), 0)
        let lines = LifecyclePromiseTests.events(gateway.process.output).filter { $0["type"] as? String == "access" }
        XCTAssertEqual(lines.count, 2, gateway.process.output)
        let h1 = lines.first { $0["path"] as? String == "/v1/open/tls-h1" }
        let h2 = lines.first { $0["path"] as? String == "/v1/open/tls-h2" }
        XCTAssertEqual(h1?["proto"] as? String, "h1", gateway.process.output)
        XCTAssertEqual(h2?["proto"] as? String, "h2", gateway.process.output)
        for line in [h1, h2] {
            let version = line?["tls"] as? String
            XCTAssertTrue(version == "TLSv1.2" || version == "TLSv1.3", "the TLS version, as OpenSSL names it: \(line ?? [:])")
        }
    }
}
