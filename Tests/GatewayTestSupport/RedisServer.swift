import Foundation

/// A real `redis-server` on a free loopback port with its own data folder, for tests; it also
/// listens on a Unix socket in that folder (`socketPath`).
///
/// Append-only persistence is on (`appendfsync always`) so a test can stop it and restart it from
/// its AOF on the same port and find every acknowledged write. `maxmemory-policy noeviction`, as the
/// gateway's key records require.
public final class RedisServer: @unchecked Sendable {  // `child` is replaced only under `lock`
    /// The TCP port it listens on (127.0.0.1).
    public let port: UInt16
    /// Its working folder (AOF, logs).
    public let directory: URL
    private var child: ChildProcess?
    private let lock = NSLock()

    /// Starts a server. - Throws: when `redis-server` is missing or does not answer within 10 s.
    public init() throws {
        port = FreePort.allocate()
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try start()
    }

    /// `redis://127.0.0.1:<port>/0`.
    public var url: String { "redis://127.0.0.1:\(port)/0" }

    /// The Unix socket it also listens on: `redis.sock` in `directory`.
    public var socketPath: String { directory.appendingPathComponent("redis.sock").path }

    /// Starts (or restarts) the server process on the same port and folder.
    public func start() throws {
        lock.lock(); defer { lock.unlock() }
        let process = try ChildProcess("redis-server", [
            "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
            "--unixsocket", socketPath, "--unixsocketperm", "700",
            "--appendonly", "yes", "--appendfsync", "always", "--save", "",
            "--maxmemory-policy", "noeviction", "--daemonize", "no",
        ])
        child = process
        guard FreePort.waitUntilListening(port) else {
            process.stop(signal: SIGKILL)
            throw ChildProcessError.notReady(process.output)
        }
    }

    /// Stops the server (SIGTERM: it flushes its AOF and exits).
    public func stop() {
        lock.lock(); defer { lock.unlock() }
        child?.stop()
        child = nil
    }

    /// Runs `redis-cli` against this server and returns its trimmed output.
    public func cli(_ arguments: String...) throws -> String {
        let result = try ChildProcess.run("redis-cli", ["-p", String(port)] + arguments)
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        child?.stop(signal: SIGKILL, grace: 1)
        try? FileManager.default.removeItem(at: directory)
    }
}
