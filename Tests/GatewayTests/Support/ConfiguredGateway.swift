import Foundation
import GatewayTestSupport
import XCTest

/// The built `attest-gateway` run as a child process on a configuration file the test writes and
/// rewrites (reload, signal and handover tests): its lifecycle and access lines, its ports, SIGHUP.
final class ConfiguredGateway {
    let process: ChildProcess
    /// The configuration file (rewritten by `rewrite`).
    let config: URL
    /// The first data listener's port (from the `started` line; 0 for a Unix socket).
    let port: UInt16
    /// The admin listener's port, when there is one.
    let adminPort: UInt16?

    /// Writes `yaml` to `directory/name` and starts the gateway on it.
    /// - Throws: when it does not print its `started` line (its output is in the error).
    init(yaml: String, directory: URL, name: String = "gateway.yaml") throws {
        config = directory.appendingPathComponent(name)
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path])
        guard let started = StartedLine.wait(for: process), let first = started.listen.first else {
            throw ChildProcessError.notReady("attest-gateway did not start: \(process.output)")
        }
        port = StartedLine.port(first) ?? 0
        adminPort = started.adminPort
    }

    /// Every JSON line so far whose `type` is `type`.
    func lines(_ type: String) -> [[String: Any]] {
        GatewayBinaryTests.jsonLines(process.output).filter { $0["type"] as? String == type }
    }

    /// Replaces the configuration file (atomically: a reader sees the old or the new file whole).
    func rewrite(_ yaml: String) throws {
        try yaml.write(to: config, atomically: true, encoding: .utf8)
    }

    /// Sends SIGHUP and returns the reload line it produced (`config_reloaded` or
    /// `config_reload_failed`); fails the test when none comes.
    func reload(file: StaticString = #filePath, line: UInt = #line) -> [String: Any] {
        let before = reloadLines().count
        kill(process.pid, SIGHUP)
        var found: [String: Any]?
        waitFor("a reload line", timeout: 15, file: file, line: line) {
            let all = reloadLines()
            if all.count > before { found = all[before] }
            return found != nil || !process.isRunning
        }
        XCTAssertTrue(process.isRunning, "SIGHUP must not end the gateway: \(process.output)", file: file, line: line)
        return found ?? [:]
    }

    private func reloadLines() -> [[String: Any]] {
        GatewayBinaryTests.jsonLines(process.output).filter {
            ["config_reloaded", "config_reload_failed"].contains($0["type"] as? String ?? "")
        }
    }

    /// `/metrics` from the admin listener.
    func metrics() throws -> String {
        guard let adminPort else { throw ChildProcessError.notReady("no admin listener") }
        return try Curl.get("http://127.0.0.1:\(adminPort)/metrics").text
    }

    /// The value of the sample `name` (with its labels, e.g. `x_total{result="success"}`) in `/metrics`.
    func metric(_ name: String) throws -> Double? {
        try metrics().split(separator: "\n").first { $0.hasPrefix(name + " ") }
            .flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// The status of `GET path` on the data listener (curl; 0 when the request failed).
    func status(_ path: String) throws -> Int {
        try Curl.get("http://127.0.0.1:\(port)\(path)").status
    }

    /// The access lines so far.
    var accessLines: [[String: Any]] { lines("access") }

    deinit { process.stop(signal: SIGKILL, grace: 1) }
}

/// `Tests/GatewayTests/Fixtures/load_client.py load`: requests sent continuously until `stop()`.
final class LoadClient {
    let process: ChildProcess
    private let stopFile: URL

    /// Starts `threads` threads sending `GET` for `paths` in turn (a new connection each) to
    /// 127.0.0.1:`port` (or the Unix socket `unix`), and waits for the first response.
    init(port: UInt16, unix: String? = nil, paths: [String], threads: Int = 4, directory: URL) throws {
        stopFile = directory.appendingPathComponent("stop-\(UUID().uuidString)")
        var arguments = [E2EPaths.loadClientScript, "load", "--port", String(port), "--threads", String(threads),
                         "--stop-file", stopFile.path]
        if let unix { arguments += ["--unix", unix] }
        for path in paths { arguments += ["--path", path] }
        process = try ChildProcess("python3", arguments)
        let process = self.process
        guard eventually({ process.output.contains("RUNNING") || !process.isRunning }), process.output.contains("RUNNING") else {
            throw ChildProcessError.notReady("load client: \(process.output)")
        }
    }

    /// Stops it and returns its summary: total, statuses, failures, errors, by_path.
    func stop() throws -> [String: Any] {
        _ = FileManager.default.createFile(atPath: stopFile.path, contents: nil)
        _ = process.wait()
        let line = process.output.split(separator: "\n").last { $0.hasPrefix("{") }
        guard let line, let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw ChildProcessError.notReady("load client summary: \(process.output)")
        }
        return json
    }

    deinit { process.stop(signal: SIGKILL, grace: 1) }
}

/// A JSON number as an Int (JSONSerialization gives NSNumber), nil for anything else.
func int(_ value: Any?) -> Int? { (value as? NSNumber)?.intValue }
