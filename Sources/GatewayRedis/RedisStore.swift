import Dispatch
import GatewayIO
import GatewayRules
import GatewayStore
import Synchronization

/// The production store: Redis through hiredis on Dispatch (DESIGN.md section 4), with exactly the
/// semantics of `MemoryStore` (both pass the shared conformance suite).
///
/// - Every state change is one Lua script (`RedisScript`), run with `EVALSHA` (scripts are loaded at
///   connect) and retried once as `EVAL` when Redis answers `NOSCRIPT`; a refusal changes nothing.
/// - Connections: one pipelined `RedisConnection` per event loop (`Configuration.loops`, the
///   gateway's loops; or, when none are given, `connections` loops of a group the store creates and
///   owns). A connection's socket sits in its loop's poller next to the loop's client and upstream
///   sockets. A command submitted on one of those loops goes to that loop's connection without a
///   queue hop, its bytes are written together with the other commands of the same loop turn (one
///   `send` per turn, at the loop's end of turn), and its completion runs on that loop, where the
///   caller already is. Commands from any other thread are spread round-robin. Completions never
///   run synchronously inside the call (fail-fast decisions included).
/// - Fail-closed: connection refused or lost, command timeout (outcome unknown), bounded queue full and
///   any Redis error reply (`OOM`, `READONLY`, `LOADING`, `NOAUTH`, `WRONGTYPE`...) complete with
///   `.failure(StoreUnavailable)`; only a script's own verdict is a `StoreRefusal`.
/// - Operations: run Redis with `maxmemory-policy noeviction` (key records must never be evicted) and
///   persistence suited to the replay guarantees you need (`appendonly yes`, `appendfsync always` keeps
///   every acknowledged counter across a restart).
public final class RedisStore: AttestStore, @unchecked Sendable {  // immutable after init; `next` is atomic; connections confine their own state to their queues
    /// Tunables of the Redis store. Durations are milliseconds.
    public struct Configuration: Sendable {
        /// Where Redis is.
        public var url: RedisURL
        /// Longest wait for a reply; after it the command fails as unavailable and the connection is reset.
        public var commandTimeout: Int = 1_000
        /// Longest wait for connect plus handshake (AUTH, SELECT, SCRIPT LOAD).
        public var connectTimeout: Int = 2_000
        /// First reconnect delay (doubled per failure, with jitter).
        public var reconnectBaseDelay: Int = 50
        /// Largest reconnect delay.
        public var reconnectMaximumDelay: Int = 2_000
        /// Commands waiting or in flight per connection at most; beyond, fail fast as `.overloaded`.
        public var maximumPendingCommands: Int = 4_096
        /// Pipelined connections (1...64) when `loops` is empty: the store then runs them in a group
        /// of as many event loops of its own (released by `close()`).
        public var connections: Int = 1
        /// Event loops to run the connections in, one connection per loop (0...64; the gateway passes
        /// its own so that commands and completions stay on the loop that issued them).
        public var loops: [EventLoop] = []
        /// Key name prefix (`aa` gives `aa:{<keyId>}:key`); printable ASCII without `{`, `}` or spaces.
        public var keyPrefix: String = "aa"
        /// How long a challenge is kept after its expiry so late use answers `challenge_expired`.
        public var challengeGrace: Int = 60_000
        /// Told each time a connection's health changes: the connection's index (that of its loop in
        /// `loops`), its new health and the detail of the last failure (for logs: it can name hosts
        /// and Redis error text, never the password). Runs on the connection's loop; must not block.
        public var onConnectionHealth: (@Sendable (_ connection: Int, _ health: RedisConnectionHealth, _ detail: String) -> Void)?

        /// Defaults for `url`: 1 s command timeout, 2 s connect timeout, 50 ms...2 s backoff, 4096
        /// pending, one connection, prefix `aa`, 60 s grace.
        public init(url: RedisURL) { self.url = url }
    }

    /// Why a configuration was refused.
    public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
        /// A value out of range, named.
        case invalid(String)
        /// Human-readable form for logs.
        public var description: String { if case .invalid(let what) = self { return "invalid Redis store configuration: \(what)" }; return "" }
    }

    private let connections: [RedisConnection]
    /// The loops the store created for itself (no `Configuration.loops` given), stopped by `close()`.
    private let ownGroup: EventLoopGroup?
    private let closed = Atomic<Bool>(false)
    private let next = Atomic<UInt64>(0)
    /// Set on each queue of `Configuration.queues` to the index of the connection that runs on it.
    private let affinity = DispatchSpecificKey<Int>()
    private let affinityQueues: [DispatchQueue]
    let schema: RedisKeySchema
    private let challengeGrace: Int64

    /// Creates the store and starts connecting in the background (no I/O on the calling thread).
    /// Commands submitted while the first connection is being made wait for it (bounded by the command
    /// timeout); use `ping` as a readiness probe.
    /// - Throws: `ConfigurationError` for out-of-range values.
    public init(configuration: Configuration) throws {
        let c = configuration
        guard c.commandTimeout > 0 else { throw ConfigurationError.invalid("commandTimeout must be > 0 ms") }
        guard c.connectTimeout > 0 else { throw ConfigurationError.invalid("connectTimeout must be > 0 ms") }
        guard c.reconnectBaseDelay > 0, c.reconnectMaximumDelay >= c.reconnectBaseDelay else {
            throw ConfigurationError.invalid("reconnect delays must satisfy 0 < base <= maximum")
        }
        guard c.maximumPendingCommands > 0 else { throw ConfigurationError.invalid("maximumPendingCommands must be > 0") }
        guard (1...64).contains(c.connections) else { throw ConfigurationError.invalid("connections must be 1...64") }
        guard c.loops.count <= 64 else { throw ConfigurationError.invalid("loops must be 0...64") }
        guard c.challengeGrace >= 1_000 else { throw ConfigurationError.invalid("challengeGrace must be >= 1000 ms") }
        let prefix = Array(c.keyPrefix.utf8)
        guard !prefix.isEmpty, prefix.count <= 64,
              prefix.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x7b && $0 != 0x7d }) else {
            throw ConfigurationError.invalid("keyPrefix must be 1...64 printable ASCII bytes without braces or spaces")
        }
        schema = RedisKeySchema(prefix: prefix)
        challengeGrace = Int64(c.challengeGrace)

        var handshake = [(command: [UInt8], expected: RedisReply)]()
        if let password = c.url.password {
            var auth = RedisCommand()
            auth.append("AUTH")
            if let username = c.url.username { auth.append(username.utf8) }
            auth.append(password.utf8)
            handshake.append((auth.encoded() ?? [], .status(Array("OK".utf8))))
        }
        if c.url.database != 0 {
            var select = RedisCommand()
            select.append("SELECT")
            select.append(decimal: Int64(c.url.database))
            handshake.append((select.encoded() ?? [], .status(Array("OK".utf8))))
        }
        for script in RedisScript.all {
            var load = RedisCommand(capacity: script.body.count + 16)
            load.append("SCRIPT")
            load.append("LOAD")
            load.append(script.body)
            handshake.append((load.encoded() ?? [], .bulk(script.sha1)))
        }
        var seeds = SystemRandomNumberGenerator()
        let backoff = ReconnectBackoff(base: UInt64(c.reconnectBaseDelay) * 1_000_000,
                                       cap: UInt64(c.reconnectMaximumDelay) * 1_000_000)
        let ownGroup = c.loops.isEmpty ? EventLoopGroup(loopCount: c.connections) : nil
        self.ownGroup = ownGroup
        let loops = ownGroup?.loops ?? c.loops
        let observer = c.onConnectionHealth
        var made: [RedisConnection] = []
        for (index, loop) in loops.enumerated() {
            let machine = RedisConnectionMachine<RedisCompletion>(
                handshake: handshake, commandTimeout: UInt64(c.commandTimeout) * 1_000_000,
                connectTimeout: UInt64(c.connectTimeout) * 1_000_000, maximumPending: c.maximumPendingCommands,
                backoff: backoff, seed: seeds.next())
            var report: (@Sendable (RedisConnectionHealth, String) -> Void)?
            if let observer {
                report = { health, detail in observer(index, health, detail) }
            }
            made.append(RedisConnection(endpoint: c.url.endpoint, machine: machine, loop: loop, onHealthChange: report))
        }
        connections = made
        affinityQueues = loops.map(\.queue)
        for (index, queue) in affinityQueues.enumerated() { queue.setSpecific(key: affinity, value: index) }
        for connection in connections { connection.start() }
    }

    /// Parses `url` (`GatewayRules.RedisURL`; a relative `unix:` path resolves against `baseDirectory`)
    /// and creates the store with default tunables.
    /// - Throws: `RedisURLError`, `ConfigurationError`.
    public convenience init(url: String, baseDirectory: String? = nil) throws {
        try self.init(configuration: Configuration(url: try RedisURL(parsing: url, baseDirectory: baseDirectory)))
    }

    /// See `AttestStore.close`: closes every connection (socket, timer, no more reconnects); pending
    /// and later commands fail as `.closed`.
    public func close() {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        for queue in affinityQueues { queue.setSpecific(key: affinity, value: nil) }
        for connection in connections { connection.close() }
        // The store's own loops stop after the connections' close work queued on them.
        for loop in ownGroup?.loops ?? [] { loop.execute { loop.stopTimer() } }
    }

    deinit { close() }

    // MARK: AttestStore

    /// See `AttestStore.issueChallenge` (one Lua script).
    public func issueChallenge(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis,
                               now: UnixMillis, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        let ttl = StoreLimits.challengeLifetime(expiresAt: expiresAt, now: now) + challengeGrace
        var args = RedisCommand(capacity: 160)
        args.append(purpose.rawValue.utf8)
        args.append(decimal: expiresAt)
        args.append(decimal: ttl)
        runScript(.issue, keys: [schema.challengeName(keyId, challenge)], args: args) { result in
            completion(result.flatMap { reply in
                reply == .integer(1) ? .success(()) : .failure(RedisStore.unexpected(reply))
            })
        }
    }

    /// See `AttestStore.registerKey` (one Lua script).
    public func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                            completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 256 + (record.receipt?.count ?? 0))
        args.append(decimal: now)
        RedisKeySchema.appendFields(of: record, to: &args)
        let keys = [schema.keyRecordName(record.keyId), schema.challengeName(record.keyId, challenge)]
        runScript(.register, keys: keys, args: args) { result in
            completion(result.flatMap { reply in
                guard case .bulk(let code) = reply else { return .failure(RedisStore.unexpected(reply)) }
                if reply.isText("ok") { return .success(.accepted(())) }
                guard let refusal = RedisStore.refusal(code) else { return .failure(RedisStore.unexpected(reply)) }
                return .success(.refused(refusal))
            })
        }
    }

    /// See `AttestStore.fetchKey` (one HMGET).
    public func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 128)
        command.append("HMGET")
        command.append(schema.keyRecordName(keyId))
        for field in RedisKeySchema.fetchFields { command.append(field) }
        send(command) { result in
            completion(result.flatMap { reply in
                if case .error = reply { return .failure(RedisStore.errorReply(reply)) }
                return RedisKeySchema.decodeRecord(keyId, reply)
            })
        }
    }

    /// See `AttestStore.commitAssertion` (one Lua script, one round trip).
    public func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                                completion: @escaping @Sendable (Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 48)
        args.append(decimal: Int64(counter))
        args.append(decimal: Int64(ReplayWindow.clampedSize(window)))
        args.append(decimal: now)
        let keys = [schema.keyRecordName(keyId), schema.challengeName(keyId, challenge)]
        runScript(.commit, keys: keys, args: args) { result in
            completion(result.flatMap(RedisStore.decodeCommit))
        }
    }

    /// See `AttestStore.revokeKey` (one Lua script).
    public func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        runScript(.revoke, keys: [schema.keyRecordName(keyId)], args: RedisCommand(capacity: 0)) { result in
            completion(result.flatMap(RedisStore.decodeFlag))
        }
    }

    /// See `AttestStore.deleteKey` (DEL of the key record).
    public func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 64)
        command.append("DEL")
        command.append(schema.keyRecordName(keyId))
        send(command) { result in completion(result.flatMap(RedisStore.decodeFlag)) }
    }

    /// See `AttestStore.ping` (PING on one pooled connection).
    public func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 8)
        command.append("PING")
        send(command) { result in
            completion(result.flatMap { reply in reply.isText("PONG") ? .success(()) : .failure(RedisStore.unexpected(reply)) })
        }
    }

    /// Number of pipelined connections (one per event loop).
    public var connectionCount: Int { connections.count }

    /// PING on every connection (one per event loop): `.success` only when each of them answered
    /// `PONG`, else the first failure. A readiness probe that must not say ready while some loop's
    /// commands still fail (a plain `ping` uses one connection). Completes once, on an arbitrary queue.
    public func pingEveryConnection(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 8)
        command.append("PING")
        guard let bytes = command.encoded() else {
            return completion(.failure(StoreUnavailable(.protocolError, detail: "could not encode command")))
        }
        let gather = PingGather(count: connections.count, completion: completion)
        for connection in connections {
            connection.submit(bytes) { result in
                gather.put(result.flatMap { reply in reply.isText("PONG") ? .success(()) : .failure(RedisStore.unexpected(reply)) })
            }
        }
    }

    /// Reads Redis' `maxmemory-policy` for a startup check: key records must never be evicted, so anything
    /// but `noeviction` deserves a loud warning. `.success(nil)` when `CONFIG GET` is not permitted
    /// (managed Redis services often disable it).
    public func evictionPolicy(completion: @escaping @Sendable (Result<String?, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 32)
        command.append("CONFIG")
        command.append("GET")
        command.append("maxmemory-policy")
        send(command) { result in
            completion(result.flatMap { reply in
                switch reply {
                case .array(let items) where items.count == 2:
                    guard case .bulk(let value) = items[1] else { return .failure(RedisStore.unexpected(reply)) }
                    return .success(String(decoding: value, as: UTF8.self))
                case .error: return .success(nil)
                default: return .failure(RedisStore.unexpected(reply))
                }
            })
        }
    }

    // MARK: Commands

    /// The connection of the caller's queue (then `local` is true: the caller runs on its queue), else
    /// the next one round-robin.
    private func connection() -> (connection: RedisConnection, local: Bool) {
        if let index = DispatchQueue.getSpecific(key: affinity), index < connections.count {
            return (connections[index], true)
        }
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return (connections[Int(index % UInt64(connections.count))], false)
    }

    /// Sends a plain command; error replies are passed through as replies.
    func send(_ command: RedisCommand, completion: @escaping RedisCompletion) {
        let (connection, local) = connection()
        guard let bytes = command.encoded() else {
            return connection.queue.async { completion(.failure(StoreUnavailable(.protocolError, detail: "could not encode command"))) }
        }
        connection.submit(bytes, onQueue: local, completion: completion)
    }

    /// Runs `script` with EVALSHA; on `NOSCRIPT` resends it once as EVAL on the same connection. Error
    /// replies other than NOSCRIPT become `StoreUnavailable(.errorReply)`.
    func runScript(_ script: RedisScript, keys: [[UInt8]], args: RedisCommand,
                           completion: @escaping RedisCompletion) {
        let (connection, local) = connection()
        guard let evalsha = RedisStore.scriptCommand(script, useSHA: true, keys: keys, args: args) else {
            return connection.queue.async { completion(.failure(StoreUnavailable(.protocolError, detail: "could not encode command"))) }
        }
        connection.submit(evalsha, onQueue: local) { result in
            if case .success(let reply) = result, reply.errorCode == "NOSCRIPT",
               let eval = RedisStore.scriptCommand(script, useSHA: false, keys: keys, args: args) {
                // Completions run on the connection's queue.
                connection.submit(eval, onQueue: true) { retried in completion(RedisStore.failErrorReplies(retried)) }
                return
            }
            completion(RedisStore.failErrorReplies(result))
        }
    }

    private static func scriptCommand(_ script: RedisScript, useSHA: Bool, keys: [[UInt8]], args: RedisCommand) -> [UInt8]? {
        var command = RedisCommand(capacity: (useSHA ? 64 : script.body.count + 16) + keys.reduce(0) { $0 + $1.count })
        if useSHA {
            command.append("EVALSHA")
            command.append(script.sha1)
        } else {
            command.append("EVAL")
            command.append(script.body)
        }
        command.append(decimal: Int64(keys.count))
        for key in keys { command.append(key) }
        command.appendArguments(of: args)
        return command.encoded()
    }

    // MARK: Reply decoding

    static func failErrorReplies(_ result: Result<RedisReply, StoreUnavailable>) -> Result<RedisReply, StoreUnavailable> {
        if case .success(let reply) = result, case .error = reply { return .failure(errorReply(reply)) }
        return result
    }

    static func errorReply(_ reply: RedisReply) -> StoreUnavailable {
        guard case .error(let message) = reply else { return unexpected(reply) }
        return StoreUnavailable(.errorReply(reply.errorCode ?? "ERR"), detail: String(decoding: message, as: UTF8.self))
    }

    static func unexpected(_ reply: RedisReply) -> StoreUnavailable {
        if case .error = reply { return errorReply(reply) }
        return StoreUnavailable(.protocolError, detail: "unexpected reply \(reply)")
    }

    private static func refusal(_ code: [UInt8]) -> StoreRefusal? {
        StoreRefusal(rawValue: String(decoding: code, as: UTF8.self))
    }

    private static func decodeFlag(_ reply: RedisReply) -> Result<Bool, StoreUnavailable> {
        switch reply {
        case .integer(0): return .success(false)
        case .integer(1): return .success(true)
        default: return .failure(unexpected(reply))
        }
    }

    private static func decodeCommit(_ reply: RedisReply) -> Result<StoreOutcome<CommittedAssertion>, StoreUnavailable> {
        guard case .array(let items) = reply, let first = items.first, case .bulk(let code) = first else {
            return .failure(unexpected(reply))
        }
        guard first.isText("ok") else {
            guard items.count == 1, let refusal = refusal(code) else { return .failure(unexpected(reply)) }
            return .success(.refused(refusal))
        }
        guard items.count == 2 || items.count == 6, case .bulk(let highestText) = items[1],
              let highest = RedisCommand.parseDecimal(highestText), let counter = UInt32(exactly: highest)
        else { return .failure(StoreUnavailable(.protocolError, detail: "corrupt counter in commit reply")) }
        guard items.count == 6 else { return .success(.accepted(CommittedAssertion(counter: counter))) }
        return .success(.accepted(CommittedAssertion(counter: counter, risk: RedisKeySchema.decodeRisk(items[2], items[3], items[4], items[5]))))
    }
}


/// Collects the answers of `pingEveryConnection` and completes once all are in.
private final class PingGather: Sendable {
    private struct State {
        var remaining: Int
        var failure: StoreUnavailable?
    }
    private let state: Mutex<State>
    private let completion: @Sendable (Result<Void, StoreUnavailable>) -> Void

    init(count: Int, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        state = Mutex(State(remaining: count, failure: nil))
        self.completion = completion
    }

    func put(_ result: Result<Void, StoreUnavailable>) {
        let done: Result<Void, StoreUnavailable>? = state.withLock { s in
            if case .failure(let error) = result, s.failure == nil { s.failure = error }
            s.remaining -= 1
            guard s.remaining == 0 else { return nil }
            return s.failure.map { .failure($0) } ?? .success(())
        }
        if let done { completion(done) }
    }
}
