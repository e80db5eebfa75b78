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
        port = FreePort.allocate()
        directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("attest-redis-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        self.unixSocket = unixSocket ? directory.appendingPathComponent("redis.sock").path : nil
        self.extra = extra
        try start()
    }

    var url: String { "redis://127.0.0.1:\(port)/0" }

    func start() throws {
        lock.lock(); defer { lock.unlock() }
        var arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
                         "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                         "--maxmemory-policy", "noeviction", "--daemonize", "no"]
        if let unixSocket { arguments += ["--unixsocket", unixSocket, "--unixsocketperm", "700"] }
        let process = try ChildProcess("redis-server", arguments + extra)
        child = process
        guard FreePort.waitUntilListening(port) else {
            process.stop(signal: SIGKILL)
            throw ChildProcessError.notReady(process.output)
        }
        if let unixSocket {
            let deadline = Date().addingTimeInterval(10)
            while !FileManager.default.fileExists(atPath: unixSocket) && Date() < deadline { usleep(10_000) }
        }
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
