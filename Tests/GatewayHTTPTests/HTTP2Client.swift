import Foundation
import GatewayTestSupport
import XCTest

/// Runs Fixtures/h2client.py (PyPI `h2`, `hyperframe`, `hpack`): one scenario, its JSON result.
enum HTTP2Client {
    static var script: String { TestUpstream.fixtures.appendingPathComponent("h2client.py").path }

    /// Runs `scenario` with its `arguments` to completion and parses the JSON object it prints last.
    static func run(port: UInt16, _ scenario: String, _ arguments: String...) throws -> [String: Any] {
        try requirePython()
        let r = try ChildProcess.run("python3", [script, "--port", String(port), scenario] + arguments)
        XCTAssertEqual(r.status, 0, r.output)
        return try parse(r.output)
    }

    /// Starts `scenario` as a child process (for scenarios that print READY and wait for the test).
    static func start(port: UInt16, _ scenario: String, _ arguments: String...) throws -> ChildProcess {
        try requirePython()
        return try ChildProcess("python3", [script, "--port", String(port), scenario] + arguments)
    }

    static func parse(_ output: String) throws -> [String: Any] {
        let line = output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? ""
        return try XCTUnwrap(try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], output)
    }

    private static func requirePython() throws {
        let check = try ChildProcess.run("python3", ["-c", "import h2, hyperframe, hpack"])
        if check.status != 0 {
            XCTFail("python3 packages h2, hyperframe and hpack are required (scripts/setup --tests): \(check.output)")
            throw ChildProcessError.notReady("h2 not installed")
        }
    }
}

/// Polls `condition` every 10 ms until it holds or `timeout` seconds pass.
func waitUntil(_ timeout: Double, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if condition() { return true }
        usleep(10_000)
    }
    return condition()
}
