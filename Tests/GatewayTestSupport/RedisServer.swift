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

    /// Starts a server on a free port, checking that the redis-server answering there is the one it
    /// started (`FreePortServer`). - Throws: when `redis-server` is missing or does not answer within 10 s.
    public init() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attest-redis-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        let started = try FreePortServer.start({ port in try RedisServer.launch(port: port, directory: directory) },
                                               owns: { port, child in FreePortServer.isRedis(child, on: port) })
        port = started.port
        child = started.child
    }

    /// `redis://127.0.0.1:<port>/0`.
    public var url: String { "redis://127.0.0.1:\(port)/0" }

    /// The Unix socket it also listens on: `redis.sock` in `directory`.
    public var socketPath: String { directory.appendingPathComponent("redis.sock").path }

    /// Restarts the server process on the same port and folder (after `stop`).
    /// - Throws: when it does not listen, or another process answers on its port.
    public func start() throws {
        lock.lock(); defer { lock.unlock() }
        let process = try RedisServer.launch(port: port, directory: directory)
        child = process
        guard FreePort.waitUntilListening(port), FreePortServer.isRedis(process, on: port) else {
            process.stop(signal: SIGKILL)
            throw ChildProcessError.notReady(process.output)
        }
    }

    private static func launch(port: UInt16, directory: URL) throws -> ChildProcess {
        try ChildProcess("redis-server", [
            "--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
            "--unixsocket", directory.appendingPathComponent("redis.sock").path, "--unixsocketperm", "700",
            "--appendonly", "yes", "--appendfsync", "always", "--save", "",
            "--maxmemory-policy", "noeviction", "--daemonize", "no",
        ])
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
