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
/// - Redis Cluster (`redis+cluster://` URLs, DESIGN.md section 11): each event loop has a
///   `RedisClusterRouter` with one pipelined connection per node, sharing one slot map
///   (`RedisClusterTopology`, from `CLUSTER SLOTS`, refreshed on redirects, on failures and every
///   `clusterRefreshInterval`); a command goes to the primary of its key's slot (`{keyId}` hash tag),
///   `MOVED`/`ASK` are followed and `TRYAGAIN`/`CLUSTERDOWN`/a down node are retried within the command
///   timeout (`RedisClusterAttempt`). Scripts are loaded on every node at connect; `NOSCRIPT` falls
///   back to `EVAL` as for one server.
/// - Durability (`waitReplicas` N > 0): every write the store acknowledges (an issued challenge, an
///   accepted registration, an accepted commit, a revocation) is followed by `WAIT N <half the command
///   timeout>` on the connection that made it; fewer than N acknowledgements complete as unavailable
///   (the write is done but may be lost with its primary: the request is not forwarded). `WAIT`
///   holds back the commands pipelined after it on that connection until it returns.
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
        /// Replicas that must acknowledge an accepted commit (`WAIT`) before it completes (0...16; 0: no WAIT).
        public var waitReplicas: Int = 0
        /// Milliseconds between two timer-driven reads of a Redis Cluster's slot map (redirects and
        /// failures also trigger one).
        public var clusterRefreshInterval: Int = 5_000
        /// TLS client context for `rediss://` / `rediss+cluster://` URLs (`RedisStore.tlsContext(for:)`:
        /// nil there means system CAs, verification on, no client certificate); ignored for plain URLs.
        package var tlsContext: TLSClientContext?
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

    /// One per loop with a standalone Redis; empty for a cluster.
    private let connections: [RedisConnection]
    /// One per loop with a Redis Cluster; empty for a standalone Redis.
    private let routers: [RedisClusterRouter]
    private let topology: RedisClusterTopology?
    /// `Configuration.waitReplicas`: replicas each acknowledged write waits for (0: none).
    public let waitReplicas: Int
    /// The `WAIT` command (nil when `waitReplicas` is 0).
    private let waitCommand: [UInt8]?
    /// The loops the store created for itself (no `Configuration.loops` given), stopped by `close()`.
    private let ownGroup: EventLoopGroup?
    private let closed = Atomic<Bool>(false)
    private let next = Atomic<UInt64>(0)
    /// Set on each queue of `Configuration.queues` to the index of the connection that runs on it.
    private let affinity = DispatchSpecificKey<Int>()
    private let affinityQueues: [DispatchQueue]
    let schema: RedisKeySchema
    /// `Configuration.url`.
    let url: RedisURL
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
        guard (0...16).contains(c.waitReplicas) else { throw ConfigurationError.invalid("waitReplicas must be 0...16") }
        guard c.clusterRefreshInterval >= 100 else { throw ConfigurationError.invalid("clusterRefreshInterval must be >= 100 ms") }
        guard c.challengeGrace >= 1_000 else { throw ConfigurationError.invalid("challengeGrace must be >= 1000 ms") }
        let prefix = Array(c.keyPrefix.utf8)
        guard !prefix.isEmpty, prefix.count <= 64,
              prefix.allSatisfy({ $0 > 0x20 && $0 < 0x7f && $0 != 0x7b && $0 != 0x7d }) else {
            throw ConfigurationError.invalid("keyPrefix must be 1...64 printable ASCII bytes without braces or spaces")
        }
        schema = RedisKeySchema(prefix: prefix)
        url = c.url
        challengeGrace = Int64(c.challengeGrace)

        var handshake = [(command: [UInt8], expected: RedisReply)]()
        if let password = c.url.password {
            var auth = RedisCommand()
            auth.append("AUTH")
            if let username = c.url.username { auth.append(username.utf8) }
            auth.append(password.utf8)
            handshake.append((auth.encoded() ?? [], .status(Array("OK".utf8))))
        }
        if c.url.database != 0 && c.url.clusterSeeds == nil {
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
        let backoff = ReconnectBackoff(base: UInt64(c.reconnectBaseDelay) * 1_000_000,
                                       cap: UInt64(c.reconnectMaximumDelay) * 1_000_000)
        let ownGroup = c.loops.isEmpty ? EventLoopGroup(loopCount: c.connections) : nil
        self.ownGroup = ownGroup
        let loops = ownGroup?.loops ?? c.loops
        let observer = c.onConnectionHealth
        waitReplicas = c.waitReplicas
        if c.waitReplicas > 0 {
            var wait = RedisCommand(capacity: 16)
            wait.append("WAIT")
            wait.append(decimal: Int64(c.waitReplicas))
            wait.append(decimal: Int64(max(1, c.commandTimeout / 2)))
            waitCommand = wait.encoded()
        } else {
            waitCommand = nil
        }
        let commandTimeout = UInt64(c.commandTimeout) * 1_000_000
        let tls = try RedisStore.tlsContext(for: c)
        let makeMachine = {
            RedisConnectionMachine<RedisCompletion>(
                handshake: handshake, commandTimeout: commandTimeout,
                connectTimeout: UInt64(c.connectTimeout) * 1_000_000, maximumPending: c.maximumPendingCommands,
                backoff: backoff, seed: UInt64.random(in: .min ... .max))
        }
        var made: [RedisConnection] = []
        var routers: [RedisClusterRouter] = []
        if let clusterSeeds = c.url.clusterSeeds {
            let topology = RedisClusterTopology(seeds: clusterSeeds)
            self.topology = topology
            for (index, loop) in loops.enumerated() {
                var report: (@Sendable (RedisConnectionHealth, String) -> Void)?
                if let observer {
                    report = { health, detail in observer(index, health, detail) }
                }
                routers.append(RedisClusterRouter(
                    loop: loop, topology: topology, commandTimeout: commandTimeout,
                    refreshInterval: index == 0 ? UInt64(c.clusterRefreshInterval) * 1_000_000 : nil,
                    onHealth: report) { endpoint, loop, onHealth in
                        RedisConnection(endpoint: endpoint, machine: makeMachine(), loop: loop, tls: tls, onHealthChange: onHealth)
                    })
            }
        } else {
            topology = nil
            for (index, loop) in loops.enumerated() {
                var report: (@Sendable (RedisConnectionHealth, String) -> Void)?
                if let observer {
                    report = { health, detail in observer(index, health, detail) }
                }
                made.append(RedisConnection(endpoint: c.url.endpoint, machine: makeMachine(), loop: loop, tls: tls,
                                            resolver: RedisStore.sentinelResolver(for: c), onHealthChange: report))
            }
        }
        self.routers = routers
        connections = made
        affinityQueues = loops.map(\.queue)
        for (index, queue) in affinityQueues.enumerated() { queue.setSpecific(key: affinity, value: index) }
        for connection in connections { connection.start() }
        for router in routers { router.start() }
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
        for router in routers { router.close() }
        // The store's own loops stop after the connections' close work queued on them.
        for loop in ownGroup?.loops ?? [] { loop.execute { loop.stop() } }
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
        runScriptRouted(.issue, keys: [schema.challengeName(keyId, challenge)], args: args) { [self] result, connection in
            let issued: Result<Void, StoreUnavailable> = result.flatMap { reply in
                reply == .integer(1) ? .success(()) : .failure(RedisStore.unexpected(reply))
            }
            guard case .success = issued, waitReplicas > 0 else { return completion(issued) }
            afterReplicas((), on: connection, completion: completion)
        }
    }

    /// See `AttestStore.registerKey` (one Lua script).
    public func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                            completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 256 + (record.receipt?.count ?? 0))
        args.append(decimal: now)
        RedisKeySchema.appendFields(of: record, to: &args)
        let keys = [schema.keyRecordName(record.keyId), schema.challengeName(record.keyId, challenge)]
        runScriptRouted(.register, keys: keys, args: args) { [self] result, connection in
            acknowledged(result.flatMap(RedisStore.decodeCodeReply), on: connection, completion: completion)
        }
    }

    /// See `AttestStore.fetchKey` (one HMGET).
    public func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 128)
        command.append("HMGET")
        command.append(schema.keyRecordName(keyId))
        for field in RedisKeySchema.fetchFields { command.append(field) }
        send(command, key: schema.keyRecordName(keyId)) { result in
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
        runScriptRouted(.commit, keys: keys, args: args) { [self] result, connection in
            acknowledged(result.flatMap(RedisStore.decodeCommit), on: connection, completion: completion)
        }
    }

    /// See `AttestStore.commitAssertion(keyId:challenge:counter:window:now:issuing:completion:)`: one
    /// Lua script (`RedisScript.commit` with the next challenge's key and arguments), one round trip
    /// for the commit and the next challenge.
    public func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                                issuing next: NextChallenge,
                                completion: @escaping @Sendable (Result<AssertionCommit, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 96)
        args.append(decimal: Int64(counter))
        args.append(decimal: Int64(ReplayWindow.clampedSize(window)))
        args.append(decimal: now)
        args.append(decimal: next.expiresAt)
        args.append(decimal: StoreLimits.challengeLifetime(expiresAt: next.expiresAt, now: now) + challengeGrace)
        let keys = [schema.keyRecordName(keyId), schema.challengeName(keyId, challenge),
                    schema.challengeName(keyId, next.challenge)]
        runScriptRouted(.commit, keys: keys, args: args) { [self] result, connection in
            let decoded = result.flatMap(RedisStore.decodeCommit).map { outcome in
                AssertionCommit(outcome: outcome, nextIssued: AssertionCommit.issuesNext(after: outcome))
            }
            // `wait_replicas`: an accepted commit (and a stored next challenge) must survive a failover.
            guard case .success(let commit) = decoded, waitReplicas > 0,
                  commit.nextIssued || commit.outcome.value != nil else { return completion(decoded) }
            afterReplicas(commit, on: connection, completion: completion)
        }
    }

    /// See `AttestStore.acquireFleetSlot` (one Lua script: INCR with a TTL of two windows).
    public func acquireFleetSlot(_ name: String, limit: Int, windowMillis: UnixMillis, now: UnixMillis,
                                 completion: @escaping @Sendable (Result<FleetSlot, StoreUnavailable>) -> Void) {
        let (index, remaining) = RedisStore.fleetWindow(now: now, windowMillis: windowMillis)
        var args = RedisCommand(capacity: 32)
        args.append(decimal: Int64(limit))
        args.append(decimal: max(windowMillis, 1) * 2)
        runScript(.fleet, keys: [schema.fleetCounterName(name, window: index)], args: args) { result in
            completion(result.flatMap { reply in
                switch reply {
                case .integer(1): return .success(.granted)
                case .integer(0): return .success(.refused(retryAfterMillis: remaining))
                default: return .failure(RedisStore.unexpected(reply))
                }
            })
        }
    }

    /// See `AttestStore.revokeKey` (one Lua script).
    public func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        runScriptRouted(.revoke, keys: [schema.keyRecordName(keyId)], args: RedisCommand(capacity: 0)) { [self] result, connection in
            let revoked = result.flatMap(RedisStore.decodeFlag)
            guard case .success(true) = revoked, waitReplicas > 0 else { return completion(revoked) }
            afterReplicas(true, on: connection, completion: completion)
        }
    }

    /// See `AttestStore.deleteKey` (DEL of the key record).
    public func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 64)
        command.append("DEL")
        let name = schema.keyRecordName(keyId)
        command.append(name)
        send(command, key: name) { result in completion(result.flatMap(RedisStore.decodeFlag)) }
    }

    /// See `AttestStore.ping` (PING on one pooled connection).
    public func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 8)
        command.append("PING")
        send(command, key: nil) { result in
            completion(result.flatMap { reply in reply.isText("PONG") ? .success(()) : .failure(RedisStore.unexpected(reply)) })
        }
    }

    /// Number of pipelined connections (one per event loop) to a standalone Redis; for a cluster,
    /// the number of per-loop routers (each with one connection per node).
    public var connectionCount: Int { max(connections.count, routers.count) }

    /// Whether the store talks to a Redis Cluster.
    public var isCluster: Bool { !routers.isEmpty }

    /// PING on every connection (one per event loop): `.success` only when each of them answered
    /// `PONG`, else the first failure. A readiness probe that must not say ready while some loop's
    /// commands still fail (a plain `ping` uses one connection). Completes once, on an arbitrary queue.
    public func pingEveryConnection(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 8)
        command.append("PING")
        guard let bytes = command.encoded() else {
            return completion(.failure(StoreUnavailable(.protocolError, detail: "could not encode command")))
        }
        if !routers.isEmpty {
            let gather = PingGather(count: routers.count, completion: completion)
            for router in routers { router.pingPrimaries { gather.put($0) } }
            return
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
        send(command, key: nil) { result in
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

    /// The replicas connected to each primary (`INFO replication`, `connected_slaves`): one entry for
    /// a standalone Redis, one per primary of the map for a cluster, each with its `host:port` (the
    /// URL's endpoint for a standalone Redis). For a start-up check of `waitReplicas`. Completes once,
    /// on an arbitrary queue; a primary that does not answer is reported as a failure.
    public func connectedReplicas(completion: @escaping @Sendable (Result<[(node: String, replicas: Int)], StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 24)
        command.append("INFO")
        command.append("replication")
        let parse: @Sendable (Result<RedisReply, StoreUnavailable>) -> Result<Int, StoreUnavailable> = { result in
            result.flatMap { reply in
                guard case .bulk(let text) = reply else { return .failure(RedisStore.unexpected(reply)) }
                for line in text.split(separator: 0x0a) where line.starts(with: Array("connected_slaves:".utf8)) {
                    let digits = line.dropFirst("connected_slaves:".utf8.count).filter { $0 != 0x0d }
                    if let count = RedisCommand.parseDecimal(digits) { return .success(Int(count)) }
                }
                return .failure(StoreUnavailable(.protocolError, detail: "no connected_slaves in INFO replication"))
            }
        }
        guard isCluster else {
            let node = RedisURL.hostPort(url.endpoint)
            return send(command, key: nil) { result in completion(parse(result).map { [(node, $0)] }) }
        }
        let info = command
        clusterPrimaries { [self] primaries in
            guard !primaries.isEmpty else {
                return completion(.failure(StoreUnavailable(.notConnected, detail: "no Redis Cluster map")))
            }
            let gather = ReplicaGather(nodes: primaries.map(RedisURL.hostPort), completion: completion)
            for (index, primary) in primaries.enumerated() {
                sendToNode(info, node: primary) { result in gather.put(index, parse(result)) }
            }
        }
    }

    // MARK: Commands

    /// The index of the caller's loop (then `local` is true: the caller runs on its queue), else the
    /// next one round-robin.
    private func loopIndex(count: Int) -> (index: Int, local: Bool) {
        if let index = DispatchQueue.getSpecific(key: affinity), index < count {
            return (index, true)
        }
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return (Int(index % UInt64(count)), false)
    }

    /// Sends RESP bytes for `key` (nil: any node): on a standalone Redis through the caller's loop's
    /// connection, on a cluster through the caller's loop's router to the key's slot. The completion
    /// gets the connection that answered (for a follow-up on the same connection).
    private func route(_ bytes: [UInt8]?, key: [UInt8]?, completion: @escaping RoutedCompletion) {
        if routers.isEmpty {
            let (index, local) = loopIndex(count: connections.count)
            let connection = connections[index]
            guard let bytes else {
                return connection.queue.async { completion(.failure(StoreUnavailable(.protocolError, detail: "could not encode command")), nil) }
            }
            connection.submit(bytes, onQueue: local) { result in completion(result, connection) }
        } else {
            let (index, local) = loopIndex(count: routers.count)
            let router = routers[index]
            guard let bytes else {
                return router.loop.queue.async { completion(.failure(StoreUnavailable(.protocolError, detail: "could not encode command")), nil) }
            }
            router.submit(slot: key.map { RedisClusterSlot.of(key: $0) } ?? -1, bytes: bytes, onQueue: local, completion: completion)
        }
    }

    /// Sends a plain command about `key` (nil: any node); error replies are passed through as replies.
    func send(_ command: RedisCommand, key: [UInt8]?, completion: @escaping RedisCompletion) {
        route(command.encoded(), key: key) { result, _ in completion(result) }
    }

    /// Runs `script` with EVALSHA on the node of `keys[0]` (every key shares its hash tag); on
    /// `NOSCRIPT` resends it once as EVAL. Error replies other than NOSCRIPT become
    /// `StoreUnavailable(.errorReply)`. The completion also gets the connection that ran it.
    func runScriptRouted(_ script: RedisScript, keys: [[UInt8]], args: RedisCommand,
                   completion: @escaping RoutedCompletion) {
        let evalsha = RedisStore.scriptCommand(script, useSHA: true, keys: keys, args: args)
        route(evalsha, key: keys.first) { [self] result, connection in
            if case .success(let reply) = result, reply.errorCode == "NOSCRIPT" {
                // Completions run on the loop's queue: the retry goes through the same loop.
                route(RedisStore.scriptCommand(script, useSHA: false, keys: keys, args: args), key: keys.first) { retried, connection in
                    completion(RedisStore.failErrorReplies(retried), connection)
                }
                return
            }
            completion(RedisStore.failErrorReplies(result), connection)
        }
    }

    /// The primaries of the cluster map as the first loop's router sees it (empty for a standalone Redis).
    func clusterPrimaries(_ completion: @escaping @Sendable ([RedisURL.Endpoint]) -> Void) {
        guard let router = routers.first else { return completion([]) }
        router.primaries(completion: completion)
    }

    /// Why the cluster's last map request failed (nil on a standalone Redis, or after a success).
    var clusterMapFailure: String? { routers.first?.mapFailure }

    /// The cluster's slot map (empty on a standalone Redis, or when none could be read in time).
    func clusterSlotTable(_ completion: @escaping @Sendable (RedisSlotTable) -> Void) {
        guard let router = routers.first else { return completion(RedisSlotTable()) }
        router.slotTable(completion: completion)
    }

    /// Sends a command to one cluster node (no redirects followed); on a standalone Redis, to its
    /// one server.
    func sendToNode(_ command: RedisCommand, node: RedisURL.Endpoint, completion: @escaping RedisCompletion) {
        guard let router = routers.first else { return send(command, key: nil, completion: completion) }
        guard let bytes = command.encoded() else {
            return router.loop.queue.async { completion(.failure(StoreUnavailable(.protocolError, detail: "could not encode command"))) }
        }
        router.submit(to: node, bytes: bytes) { result, _ in completion(result) }
    }

    /// `runScript` for callers that do not need the connection.
    func runScript(_ script: RedisScript, keys: [[UInt8]], args: RedisCommand, completion: @escaping RedisCompletion) {
        runScriptRouted(script, keys: keys, args: args) { result, _ in completion(result) }
    }

    /// `decoded` once durable: an accepted outcome waits for `wait_replicas` (`afterReplicas`); a
    /// refusal (nothing written) and a failure complete at once.
    func acknowledged<T: Sendable>(_ decoded: Result<StoreOutcome<T>, StoreUnavailable>, on connection: RedisConnection?,
                                   completion: @escaping @Sendable (Result<StoreOutcome<T>, StoreUnavailable>) -> Void) {
        guard case .success(let outcome) = decoded, outcome.value != nil, waitReplicas > 0 else { return completion(decoded) }
        afterReplicas(outcome, on: connection, completion: completion)
    }

    /// After an accepted write on `connection`: `WAIT waitReplicas timeout` there (it covers every
    /// write made on that connection so far), then `value` when enough replicas acknowledged, else
    /// `.failure` (the write is done but not known to survive the loss of its primary).
    func afterReplicas<T: Sendable>(_ value: T, on connection: RedisConnection?,
                                    completion: @escaping @Sendable (Result<T, StoreUnavailable>) -> Void) {
        guard let waitCommand else { return completion(.success(value)) }
        guard let connection else {
            return completion(.failure(StoreUnavailable(.protocolError, detail: "no connection to WAIT on")))
        }
        let wanted = waitReplicas
        // Completions run on the connection's queue.
        connection.submit(waitCommand, onQueue: true) { result in
            switch result {
            case .success(.integer(let acknowledged)) where acknowledged >= Int64(wanted):
                completion(.success(value))
            case .success(.integer(let acknowledged)):
                completion(.failure(StoreUnavailable(.errorReply("WAIT"), detail: "\(acknowledged) of \(wanted) replicas acknowledged the write")))
            case .success(let reply):
                completion(.failure(RedisStore.unexpected(reply)))
            case .failure(let error):
                completion(.failure(error))
            }
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

    static func refusal(_ code: [UInt8]) -> StoreRefusal? {
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
final class PingGather: Sendable {
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


/// Collects `connectedReplicas` answers per primary and completes once all are in.
private final class ReplicaGather: Sendable {
    private struct State {
        var counts: [Int?]
        var remaining: Int
        var failure: StoreUnavailable?
    }
    private let nodes: [String]
    private let state: Mutex<State>
    private let completion: @Sendable (Result<[(node: String, replicas: Int)], StoreUnavailable>) -> Void

    init(nodes: [String], completion: @escaping @Sendable (Result<[(node: String, replicas: Int)], StoreUnavailable>) -> Void) {
        self.nodes = nodes
        state = Mutex(State(counts: Array(repeating: nil, count: nodes.count), remaining: nodes.count))
        self.completion = completion
    }

    func put(_ index: Int, _ result: Result<Int, StoreUnavailable>) {
        let done: Result<[(node: String, replicas: Int)], StoreUnavailable>? = state.withLock { s in
            switch result {
            case .success(let count): s.counts[index] = count
            case .failure(let error): if s.failure == nil { s.failure = error }
            }
            s.remaining -= 1
            guard s.remaining == 0 else { return nil }
            if let failure = s.failure { return .failure(failure) }
            return .success(zip(nodes, s.counts).map { ($0, $1 ?? 0) })
        }
        if let done { completion(done) }
    }
}
