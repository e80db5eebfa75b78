import Foundation
import GatewayTestSupport

/// A redis-server with extra options that the shared `RedisServer` helper does not set (a Unix socket,
/// `enable-debug-command local`), for the Redis-specific tests of this target. Same persistence as
/// `RedisServer`: AOF with `appendfsync always`, `maxmemory-policy noeviction`.
final class CustomRedisServer: @unchecked Sendable {  // `child` replaced only under `lock`
    let port: UInt16
    let directory: URL
    let unixSocket: String?
    private let extra: [String]
    private var child: ChildProcess?
    private let lock = NSLock()

    init(unixSocket: Bool = false, extra: [String] = []) throws {
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("attest-redis-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.directory = directory
        let socket = unixSocket ? directory.appendingPathComponent("redis.sock").path : nil
        self.unixSocket = socket
        self.extra = extra
        // A free port, checked to be answered by the redis-server started here (FreePortServer).
        let started = try FreePortServer.start({ port in
            try ChildProcess("redis-server", CustomRedisServer.arguments(port: port, directory: directory, unixSocket: socket) + extra)
        }, owns: { port, child in FreePortServer.isRedis(child, on: port) })
        port = started.port
        child = started.child
        try waitForSocket()
    }

    private static func arguments(port: UInt16, directory: URL, unixSocket: String?) -> [String] {
        var arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
                         "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                         "--maxmemory-policy", "noeviction", "--daemonize", "no"]
        if let unixSocket { arguments += ["--unixsocket", unixSocket, "--unixsocketperm", "700"] }
        return arguments
    }

    private func waitForSocket() throws {
        guard let unixSocket else { return }
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: unixSocket) {
            if Date() > deadline { throw SetupFailure("redis-server made no socket at \(unixSocket)") }
            usleep(10_000)
        }
    }

    var url: String { "redis://127.0.0.1:\(port)/0" }

    /// Restarts the server on the same port (after `stop`).
    func start() throws {
        lock.lock(); defer { lock.unlock() }
        let process = try ChildProcess("redis-server", CustomRedisServer.arguments(port: port, directory: directory, unixSocket: unixSocket) + extra)
        child = process
        guard FreePort.waitUntilListening(port), FreePortServer.isRedis(process, on: port) else {
            process.stop(signal: SIGKILL)
            throw ChildProcessError.notReady(process.output)
        }
        try waitForSocket()
    }

    func stop() {
        lock.lock(); defer { lock.unlock() }
        child?.stop()
        child = nil
    }

    func cli(_ arguments: String...) throws -> String {
        let result = try ChildProcess.run("redis-cli", ["-p", String(port)] + arguments)
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    deinit {
        child?.stop(signal: SIGKILL, grace: 1)
        try? FileManager.default.removeItem(at: directory)
    }
}
