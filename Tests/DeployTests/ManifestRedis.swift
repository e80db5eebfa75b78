import Foundation
import GatewayTestSupport
import XCTest

/// A manifest's Redis start command (`sh -c '... exec redis-server CONF --include /tmp/auth.conf'`)
/// run on this machine with its container paths mapped to temporary files: the password from a
/// secret file, the configuration the manifest mounts. Shows that the secret reaches Redis as its
/// password without a command-line argument and that the mounted configuration loads.
final class ManifestRedis {
    let process: ChildProcess
    let port: UInt16
    let password: String
    let work: URL

    /// Starts `shellCommand` with each `(container path, host path)` of `paths` replaced, the secret
    /// file `secretPath` holding a fresh password, and `/tmp/` mapped to a temporary folder; the
    /// port and data folder are appended as arguments.
    init(shellCommand: String, secretPath: String, paths: [(String, String)]) throws {
        work = try DeployTools.temporaryDirectory("redis")
        password = "pw-\(UUID().uuidString) with spaces"
        let secret = work.appendingPathComponent("secret")
        try password.write(to: secret, atomically: true, encoding: .utf8)
        port = FreePort.allocate()
        // The container's /tmp first: the temporary files below live under this machine's /tmp.
        var command = shellCommand.replacingOccurrences(of: "/tmp/", with: work.path + "/")
        command = command.replacingOccurrences(of: secretPath, with: secret.path)
        for (inside, outside) in paths { command = command.replacingOccurrences(of: inside, with: outside) }
        command += " --port \(port) --dir \(work.path) --daemonize no --save ''"
        process = try ChildProcess(try DeployTools.system("sh"), ["-c", command])
        guard FreePort.waitUntilListening(port, timeout: 10) else {
            throw ChildProcessError.notReady("redis-server from the manifest's command: \(process.output)")
        }
    }

    /// `redis-cli` against it, with the password when `authenticated`.
    func cli(_ arguments: [String], authenticated: Bool) throws -> String {
        try DeployTools.run(try DeployTools.system("redis-cli"), ["-p", String(port)] + arguments,
                            environment: authenticated ? ["REDISCLI_AUTH": password] : [:]).output
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Checks what the gateway relies on: a password, noeviction, append-only persistence.
    func assertConfigured(file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertTrue(try cli(["ping"], authenticated: false).contains("NOAUTH"), "no password set", file: file, line: line)
        XCTAssertEqual(try cli(["ping"], authenticated: true), "PONG", file: file, line: line)
        XCTAssertEqual(try cli(["config", "get", "maxmemory-policy"], authenticated: true), "maxmemory-policy\nnoeviction", file: file, line: line)
        XCTAssertEqual(try cli(["config", "get", "appendonly"], authenticated: true), "appendonly\nyes", file: file, line: line)
    }

    deinit {
        process.stop()
        try? FileManager.default.removeItem(at: work)
    }
}
