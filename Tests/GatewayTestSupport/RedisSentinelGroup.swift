import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A real Redis Sentinel deployment for tests (DESIGN.md section 11): a primary and `replicas`
/// replicas (`redis-server --replicaof`) and `sentinels` `redis-sentinel` processes monitoring the
/// primary as `master` with quorum `sentinels / 2 + 1`, all on free loopback ports.
///
/// Sentinels use `down-after-milliseconds 1000` and `failover-timeout 5000`, so a killed primary is
/// failed over within a few seconds. Start returns once every Sentinel knows the primary, its
/// replicas and the other Sentinels (a `SENTINEL FAILOVER` right after start then has a replica to
/// promote).
public final class RedisSentinelGroup: @unchecked Sendable {  // `servers` is mutated only under `lock`
    /// The master name the Sentinels monitor.
    public let master = "main"
    /// Data-node ports (the primary at start first).
    public let dataPorts: [UInt16]
    /// Sentinel ports.
    public let sentinelPorts: [UInt16]
    private let root: URL
    private var servers: [UInt16: ChildProcess] = [:]
    private let lock = NSLock()

    /// Starts the data nodes, waits for replication, then the Sentinels.
    /// - Throws: `SetupFailure` when a process does not start or the Sentinels do not converge within 30 s.
    public init(replicas: Int = 1, sentinels: Int = 3) throws {
        let root = URL(fileURLWithPath: "/tmp").appendingPathComponent("attest-sentinel-\(UUID().uuidString.prefix(8))")
        let master = "main"
        self.root = root
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var dataPorts: [UInt16] = []
        var started: [UInt16: ChildProcess] = [:]
        var sentinelPorts: [UInt16] = []
        do {
            for index in 0...replicas {
                let directory = root.appendingPathComponent("data\(index)")
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let primary = dataPorts.first
                let (port, child) = try FreePortServer.start({ port in
                    var arguments = ["--port", String(port), "--bind", "127.0.0.1", "--dir", directory.path,
                                     "--appendonly", "yes", "--appendfsync", "always", "--save", "",
                                     "--maxmemory-policy", "noeviction", "--daemonize", "no"]
                    if let primary { arguments += ["--replicaof", "127.0.0.1", String(primary)] }
                    return try ChildProcess("redis-server", arguments)
                }, owns: { port, child in FreePortServer.isRedis(child, on: port) })
                dataPorts.append(port)
                started[port] = child
            }
            self.dataPorts = dataPorts
            let primary = dataPorts[0]
            try RedisSentinelGroup.poll("\(replicas) replicas online (synchronized) on the primary", timeout: 30) {
                let info = (try? RedisSentinelGroup.cli(primary, ["INFO", "replication"])) ?? ""
                return info.components(separatedBy: "state=online").count - 1 == replicas
            }
            let quorum = sentinels / 2 + 1
            for index in 0..<sentinels {
                let (port, child) = try FreePortServer.start({ port in
                    let config = root.appendingPathComponent("sentinel\(index)-\(port).conf")
                    try """
                    port \(port)
                    bind 127.0.0.1
                    dir \(root.path)
                    sentinel monitor \(master) 127.0.0.1 \(primary) \(quorum)
                    sentinel down-after-milliseconds \(master) 1000
                    sentinel failover-timeout \(master) 5000
                    sentinel parallel-syncs \(master) 1

                    """.write(to: config, atomically: true, encoding: .utf8)
                    return try ChildProcess("redis-sentinel", [config.path])
                }, owns: { port, child in FreePortServer.isRedis(child, on: port) })
                sentinelPorts.append(port)
                started[port] = child
            }
        } catch {
            for child in started.values { child.stop(signal: SIGKILL, grace: 1) }
            try? FileManager.default.removeItem(at: root)
            throw error
        }
        self.sentinelPorts = sentinelPorts
        servers = started
        for port in sentinelPorts {
            try RedisSentinelGroup.poll("Sentinel \(port) to know the replicas and the other Sentinels", timeout: 30) {
                guard let info = try? RedisSentinelGroup.cli(port, ["SENTINEL", "MASTER", self.master]) else { return false }
                let fields = info.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
                func value(_ name: String) -> String? { fields.firstIndex(of: name).flatMap { $0 + 1 < fields.count ? fields[$0 + 1] : nil } }
                return value("num-slaves") == String(replicas) && value("num-other-sentinels") == String(sentinels - 1)
            }
        }
    }

    /// `redis+sentinel://127.0.0.1:<s1>,127.0.0.1:<s2>,.../main`.
    public var url: String {
        "redis+sentinel://" + sentinelPorts.map { "127.0.0.1:\($0)" }.joined(separator: ",") + "/\(master)"
    }

    /// The primary's port as the first answering Sentinel reports it.
    public func currentPrimary() throws -> UInt16 {
        for port in sentinelPorts {
            guard let text = try? RedisSentinelGroup.cli(port, ["SENTINEL", "get-master-addr-by-name", master]) else { continue }
            let lines = text.split(whereSeparator: \.isNewline)
            if lines.count == 2, let primary = UInt16(lines[1].trimmingCharacters(in: .whitespaces)) { return primary }
        }
        throw SetupFailure("no Sentinel names the primary")
    }

    /// Asks a Sentinel to fail over now (`SENTINEL FAILOVER main`); its answer.
    public func failover() throws -> String {
        try RedisSentinelGroup.cli(sentinelPorts[0], ["SENTINEL", "FAILOVER", master])
    }

    /// SIGKILLs the process on `port` (a data node or a Sentinel).
    public func kill(_ port: UInt16) {
        lock.lock()
        let child = servers.removeValue(forKey: port)
        lock.unlock()
        child?.stop(signal: SIGKILL, grace: 1)
    }

    /// Runs `redis-cli -p port ARGS...` and returns its trimmed output.
    public static func cli(_ port: UInt16, _ arguments: [String]) throws -> String {
        try ChildProcess.run("redis-cli", ["-p", String(port)] + arguments).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Polls `condition` every 50 ms for at most `timeout` seconds; throws `SetupFailure` naming `what`.
    private static func poll(_ what: String, timeout: TimeInterval, _ condition: () -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while !condition() {
            guard Date() < deadline else { throw SetupFailure("timed out waiting for \(what)") }
            usleep(50_000)
        }
    }

    deinit {
        for child in servers.values { child.stop(signal: SIGKILL, grace: 1) }
        try? FileManager.default.removeItem(at: root)
    }
}
