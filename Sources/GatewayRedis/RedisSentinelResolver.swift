import GatewayIO
import GatewayRules
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Finds the current primary of a `redis+sentinel://` store (DESIGN.md section 11) by asking its
/// Sentinels, following the Redis Sentinel client guidelines ("Sentinel clients implementation
/// guidelines", redis.io): the Sentinels are tried in order, each with `SENTINEL
/// get-master-addr-by-name <master>` on a fresh connection bounded by `timeout`; the first that
/// answers with an address wins and moves to the front of the list (so the next resolution asks it
/// first); a Sentinel that is down, slow or does not know the master is skipped.
///
/// `RedisConnection` calls `resolve()` before every connection attempt (the first one and every
/// reconnect after a lost connection, a `READONLY` reply or a failed connect), off its event loop
/// (the calls block: connect, write, read with `poll`). So a failover (the primary killed, or
/// `SENTINEL FAILOVER`, after which Sentinel disconnects the clients of the demoted primary) is
/// followed without a restart: the next connection goes to the promoted replica. Requests between
/// the loss and the reconnect answer `503` (fail-closed).
final class RedisSentinelResolver: Sendable {
    /// The Sentinels, the one that answered last first.
    private let sentinels: Mutex<[RedisURL.Endpoint]>
    /// The master name asked for.
    let master: String
    /// Longest wait per Sentinel (connect plus reply), nanoseconds.
    let timeout: UInt64

    /// A resolver for `master` through `sentinels` (at least one), each asked for at most `timeout`
    /// nanoseconds.
    init(sentinels: [RedisURL.Endpoint], master: String, timeout: UInt64) {
        self.sentinels = Mutex(sentinels)
        self.master = master
        self.timeout = timeout
    }

    /// Why one Sentinel gave no address.
    struct Problem: Error {
        /// What went wrong, for the health log.
        let text: String
        init(_ text: String) { self.text = text }
    }

    /// The primary's address (blocking; call off the event loops), or why none was found: each
    /// Sentinel's failure, in order.
    func resolve() -> Result<RedisURL.Endpoint, RedisSentinelFailure> {
        var command = RedisCommand(capacity: 64)
        command.append("SENTINEL")
        command.append("get-master-addr-by-name")
        command.append(master.utf8)
        guard let bytes = command.encoded() else { return .failure(RedisSentinelFailure(master: master, problems: ["cannot encode the query"])) }
        var problems: [String] = []
        for sentinel in sentinels.withLock({ $0 }) {
            switch RedisSentinelResolver.query(sentinel, bytes, timeout: timeout) {
            case .failure(let problem):
                problems.append("\(RedisURL.hostPort(sentinel)): \(problem.text)")
            case .success(let reply):
                switch RedisSentinelResolver.address(from: reply) {
                case .success(let primary):
                    sentinels.withLock { list in
                        if let index = list.firstIndex(of: sentinel), index > 0 { list.insert(list.remove(at: index), at: 0) }
                    }
                    return .success(primary)
                case .failure(let problem):
                    problems.append("\(RedisURL.hostPort(sentinel)): \(problem.text)")
                }
            }
        }
        return .failure(RedisSentinelFailure(master: master, problems: problems))
    }

    /// The `[ip, port]` reply of `SENTINEL get-master-addr-by-name` as an endpoint.
    static func address(from reply: RedisReply) -> Result<RedisURL.Endpoint, Problem> {
        switch reply {
        case .null:
            return .failure(Problem("does not know this master"))
        case .error(let text):
            return .failure(Problem("answered \(String(decoding: text.prefix(200), as: UTF8.self))"))
        case .array(let parts):
            guard parts.count == 2, case .bulk(let hostBytes) = parts[0], case .bulk(let portBytes) = parts[1],
                  let port = RedisCommand.parseDecimal(portBytes), (1...65535).contains(port) else {
                return .failure(Problem("answered a malformed address"))
            }
            let text = String(decoding: hostBytes, as: UTF8.self)
            let host: String
            if let v4 = NetworkSyntax.ipv4(text) {
                host = v4
            } else if let v6 = NetworkSyntax.ipv6(text) {
                host = v6
            } else if NetworkSyntax.isHostName(text) {
                host = text.lowercased()
            } else {
                return .failure(Problem("answered a malformed host"))
            }
            return .success(RedisURL.Endpoint.tcp(host: host, port: UInt16(port)))
        default:
            return .failure(Problem("answered a malformed address"))
        }
    }

    /// Sends `command` to `endpoint` on a new TCP connection and reads one reply, within `timeout`
    /// nanoseconds in all (blocking, with poll(2)).
    static func query(_ endpoint: RedisURL.Endpoint, _ command: [UInt8], timeout: UInt64) -> Result<RedisReply, Problem> {
        guard case .tcp(let host, let port) = endpoint else { return .failure(Problem("not a TCP address")) }
        let deadline = EventLoop.now() + timeout
        let addresses: [SocketAddress]
        if let literal = SocketAddress.literal(host: host, port: port) {
            addresses = [literal]
        } else {
            do { addresses = try SocketAddress.resolveAll(host: host, port: port) } catch { return .failure(Problem("\(error)")) }
        }
        var lastProblem = "no address"
        for address in addresses {
            let result = query(address, command, deadline: deadline)
            if case .success = result { return result }
            if case .failure(let problem) = result { lastProblem = problem.text }
            if EventLoop.now() >= deadline { break }
        }
        return .failure(Problem(lastProblem))
    }

    private static func query(_ address: SocketAddress, _ command: [UInt8], deadline: UInt64) -> Result<RedisReply, Problem> {
        let fd: Int32
        do { fd = try GatewayIO.Socket.makeStream(family: address.family) } catch { return .failure(Problem("\(error)")) }
        defer { close(fd) }
        switch GatewayIO.Socket.connect(fd, to: address) {
        case .failure(let failure): return .failure(Problem("\(failure)"))
        case .success(true): break
        case .success(false):
            guard wait(fd, Int16(POLLOUT), deadline: deadline) else { return .failure(Problem("connect timed out")) }
            let status = GatewayIO.Socket.pendingError(fd)
            guard status == 0 else { return .failure(Problem("connect: \(errnoText(status))")) }
        }
        var offset = 0
        while offset < command.count {
            let written = command.withUnsafeBytes { GatewayIO.Socket.write(fd, UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            switch written {
            case .failure(let failure): return .failure(Problem("\(failure)"))
            case .success(let n):
                offset += n
                if n == 0, !wait(fd, Int16(POLLOUT), deadline: deadline) { return .failure(Problem("write timed out")) }
            }
        }
        guard let parser = RedisReplyParser() else { return .failure(Problem("out of memory")) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 8)
        defer { buffer.deallocate() }
        while true {
            guard wait(fd, Int16(POLLIN), deadline: deadline) else { return .failure(Problem("no reply in time")) }
            switch GatewayIO.Socket.read(fd, into: buffer) {
            case .bytes(let n):
                do {
                    try parser.feed(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[0..<n]))
                    if let reply = try parser.next() { return .success(reply) }
                } catch {
                    return .failure(Problem("protocol error"))
                }
            case .wouldBlock: continue
            case .endOfFile: return .failure(Problem("closed the connection"))
            case .failed(let e): return .failure(Problem("read: \(errnoText(e))"))
            }
        }
    }

    /// Waits until `fd` has `events` or `deadline` (monotonic nanoseconds) passes; false on timeout.
    private static func wait(_ fd: Int32, _ events: Int16, deadline: UInt64) -> Bool {
        while true {
            let now = EventLoop.now()
            guard now < deadline else { return false }
            var entry = pollfd(fd: fd, events: events, revents: 0)
            let millis = Int32(min((deadline - now) / 1_000_000 + 1, UInt64(Int32.max)))
            let rc = poll(&entry, 1, millis)
            if rc > 0 { return true }
            if rc < 0 && errno != EINTR { return false }
        }
    }
}
