import Foundation
import GatewayTestSupport
import XCTest

/// deploy/systemd/attest-gateway.service: `systemd-analyze security` (offline, on the file) rates its
/// exposure 2.0 or less; it reloads with SIGHUP and waits longer than the drain; and the gateway, run
/// under strace, makes no system call its `SystemCallFilter=` would refuse.
final class SystemdUnitTests: XCTestCase {
    static let unit = DeployTools.root.appendingPathComponent("deploy/systemd/attest-gateway.service")

    /// The overall exposure systemd-analyze reports for `unit`, its exit status with `--threshold=20`
    /// (non-zero above 2.0) and its output.
    static func exposure(of unit: URL) throws -> (exposure: Double, status: Int32, output: String) {
        let result = try DeployTools.run(try DeployTools.system("systemd-analyze"),
                                         ["security", "--offline=true", "--threshold=20", "--no-pager", unit.path])
        let marker = "Overall exposure level for \(unit.lastPathComponent): "
        guard let range = result.output.range(of: marker),
              let value = Double(result.output[range.upperBound...].prefix { $0.isNumber || $0 == "." }) else {
            throw DeployTools.SetupError.commandFailed("systemd-analyze security", result.output)
        }
        return (value, result.status, result.output)
    }

    func testExposureIsAtMostTwo() throws {
        let result = try Self.exposure(of: Self.unit)
        XCTAssertLessThanOrEqual(result.exposure, 2.0, result.output)
        XCTAssertEqual(result.status, 0, result.output)
        // Every directive is one this systemd knows (a misspelt one would be ignored, not enforced).
        XCTAssertFalse(result.output.contains("Unknown key"), result.output)
        XCTAssertFalse(result.output.contains("Unknown lvalue"), result.output)
        XCTAssertFalse(result.output.contains("Failed to parse"), result.output)
    }

    /// The failing variant: the same unit without its hardening section is rated above 2.0 and the
    /// threshold makes systemd-analyze fail.
    func testUnitWithoutHardeningIsRejected() throws {
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        let start = try XCTUnwrap(text.range(of: "# Identity and privileges"))
        let end = try XCTUnwrap(text.range(of: "[Install]"))
        let weakened = String(text[..<start.lowerBound]) + String(text[end.lowerBound...])
        let dir = try DeployTools.temporaryDirectory("unit")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("attest-gateway.service")
        try weakened.write(to: file, atomically: true, encoding: .utf8)
        let result = try Self.exposure(of: file)
        XCTAssertGreaterThan(result.exposure, 2.0, result.output)
        XCTAssertNotEqual(result.status, 0, result.output)
    }

    func testReloadsWithSIGHUPAndOutwaitsTheDrain() throws {
        let text = try String(contentsOf: Self.unit, encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init)
        XCTAssertTrue(lines.contains("ExecReload=/bin/kill -HUP $MAINPID"))
        XCTAssertTrue(lines.contains("ExecStartPre=/usr/local/bin/attest-gateway check-config /etc/attest-gateway/gateway.yaml"))
        let stop = try XCTUnwrap(lines.first { $0.hasPrefix("TimeoutStopSec=") }.flatMap { Int($0.dropFirst("TimeoutStopSec=".count)) })
        XCTAssertGreaterThan(stop, 30, "TimeoutStopSec must exceed timeouts.drain's default (30s)")
    }

    /// The packaged gateway under `strace -f`: check-config, then a start (an upstream named
    /// `localhost`, so the resolver runs too), proxied requests, an admin request and the SIGTERM
    /// drain. Every call it makes passes the unit's filter (`@system-service` minus `~@privileged`,
    /// resolved with systemd's own table), and every socket it opens is of a family
    /// `RestrictAddressFamilies=` allows.
    func testGatewaySystemCallsPassTheUnitsFilter() throws {
        let release = try PackagedRelease.shared()
        let unitText = try String(contentsOf: Self.unit, encoding: .utf8)
        let families = SystemCallFilter.addressFamilies(ofUnit: unitText)
        XCTAssertEqual(families, ["AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK"])
        let filter = SystemCallFilter(
            lines: SystemCallFilter.lines(ofUnit: unitText),
            groups: SystemCallFilter.groups(fromAnalyzeOutput: try DeployTools.output(try DeployTools.system("systemd-analyze"), ["syscall-filter", "--no-pager"])))
        XCTAssertTrue(filter.allowed.contains("epoll_wait"))
        XCTAssertFalse(filter.allowed.contains("mount"), "@privileged is denied")
        let strace = try DeployTools.system("strace")
        let dir = try DeployTools.temporaryDirectory("strace")
        defer { try? FileManager.default.removeItem(at: dir) }

        let upstream = try ChildProcess(release.attestctl, ["demo-upstream", "--listen", "127.0.0.1:0"])
        defer { upstream.stop() }
        var upstreamPort: UInt16?
        waitFor("the demo upstream listens", timeout: 20) {
            upstreamPort = upstream.output.components(separatedBy: "listening on ").dropFirst().first.flatMap { DeployTools.port(in: $0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return upstreamPort != nil || !upstream.isRunning
        }
        let config = dir.appendingPathComponent("gateway.yaml")
        try """
            listen: 127.0.0.1:0
            admin: 127.0.0.1:0
            store: memory
            apps:
              - app_id: ABCDE12345.com.example.app
                environment: production
            upstreams:
              app: http://127.0.0.1:\(try XCTUnwrap(upstreamPort, upstream.output))
              named: http://localhost:\(try XCTUnwrap(upstreamPort, upstream.output))
            routes:
              - path_prefix: /protected
                upstream: app
              - path_prefix: /named
                upstream: named
                mode: off
              - path_prefix: /
                upstream: app
                mode: off
            """.write(to: config, atomically: true, encoding: .utf8)

        let checkTrace = dir.appendingPathComponent("check.trace")
        let check = try DeployTools.run(strace, ["-f", "-qq", "-o", checkTrace.path, release.gateway, "check-config", config.path])
        XCTAssertEqual(check.status, 0, check.output)

        let runTrace = dir.appendingPathComponent("run.trace")
        let gateway = try ChildProcess(strace, ["-f", "-qq", "-o", runTrace.path, release.gateway, "--config", config.path])
        defer { gateway.stop(signal: SIGKILL) }
        var started: [String: Any]?
        waitFor("the traced gateway starts", timeout: 30) {
            started = DeployTools.jsonLines(gateway.output).first { $0["type"] as? String == "started" }
            return started != nil || !gateway.isRunning
        }
        let line = try XCTUnwrap(started, gateway.output)
        let port = try XCTUnwrap((line["listen"] as? String).flatMap(DeployTools.port(in:)))
        let adminPort = try XCTUnwrap((line["admin"] as? String).flatMap(DeployTools.port(in:)))
        let pid = try XCTUnwrap((line["pid"] as? Int).map { Int32($0) })
        let curl = try DeployTools.system("curl")
        XCTAssertEqual(try DeployTools.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/open"]).output, "200")
        XCTAssertEqual(try DeployTools.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", "{}", "http://127.0.0.1:\(port)/protected"]).output, "401")
        XCTAssertEqual(try DeployTools.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(adminPort)/healthz"]).output, "200")
        XCTAssertEqual(try DeployTools.run(curl, ["-s", "-o", "/dev/null", "-w", "%{http_code}", "--http2-prior-knowledge", "http://127.0.0.1:\(port)/open"]).output, "200")
        // Through the upstream named localhost: the status depends on which address answers (the
        // demo upstream listens on 127.0.0.1 only); what matters here is the calls it takes.
        _ = try DeployTools.run(curl, ["-s", "-o", "/dev/null", "http://127.0.0.1:\(port)/named"])
        kill(pid, SIGTERM)
        XCTAssertEqual(gateway.wait(), 0, gateway.output)

        for trace in [checkTrace, runTrace] {
            let calls = SystemCallFilter.calls(inTrace: try String(contentsOf: trace, encoding: .utf8))
            XCTAssertTrue(calls.contains("openat") && calls.contains("mmap"), "\(trace.lastPathComponent): \(calls.sorted())")
            XCTAssertEqual(calls.subtracting(filter.allowed).sorted(), [],
                           "\(trace.lastPathComponent): calls the unit's SystemCallFilter refuses (EPERM)")
            let opened = SystemCallFilter.socketFamilies(inTrace: try String(contentsOf: trace, encoding: .utf8))
            XCTAssertEqual(opened.subtracting(families).sorted(), [],
                           "\(trace.lastPathComponent): sockets RestrictAddressFamilies refuses")
        }
        XCTAssertTrue(SystemCallFilter.socketFamilies(inTrace: try String(contentsOf: runTrace, encoding: .utf8)).contains("AF_INET"))
    }

    /// The failing variant of the filter check: calls outside the set are found, in strace's format.
    func testFilterCheckFindsRefusedCalls() throws {
        let groups = SystemCallFilter.groups(fromAnalyzeOutput: try DeployTools.output(try DeployTools.system("systemd-analyze"), ["syscall-filter", "--no-pager"]))
        let filter = SystemCallFilter(lines: ["@system-service", "~@privileged @resources"], groups: groups)
        let trace = """
            4242  openat(AT_FDCWD, "/etc/x", O_RDONLY) = 3
            4242  setpriority(PRIO_PROCESS, 0, 10) = 0
            4243  mount("proc", "/proc", "proc", 0, NULL) = 0
            4243  <... futex resumed>) = 0
            4243  +++ exited with 0 +++
            """
        let calls = SystemCallFilter.calls(inTrace: trace)
        XCTAssertEqual(calls, ["openat", "setpriority", "mount"])
        XCTAssertEqual(calls.subtracting(filter.allowed), ["setpriority", "mount"])
        let sockets = """
            4242  socket(AF_INET, SOCK_STREAM|SOCK_CLOEXEC|SOCK_NONBLOCK, IPPROTO_IP) = 11
            4243  socket(AF_PACKET, SOCK_RAW|SOCK_CLOEXEC, 768 <unfinished ...>
            """
        XCTAssertEqual(SystemCallFilter.socketFamilies(inTrace: sockets).subtracting(["AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK"]), ["AF_PACKET"])
    }
}
