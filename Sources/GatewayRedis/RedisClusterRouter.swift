import Dispatch
import GatewayIO
import GatewayRules
import GatewayStore

/// Completion of a routed command: the reply (or why none) and the connection that gave it (nil when
/// none did), so a follow-up (`WAIT`) can go to the same node on the same connection.
typealias RoutedCompletion = @Sendable (Result<RedisReply, StoreUnavailable>, RedisConnection?) -> Void

/// One event loop's view of a Redis Cluster (DESIGN.md section 11): one pipelined `RedisConnection` per
/// node, living in this loop, and a copy of the shared slot map (`RedisClusterTopology`).
///
/// A command names its slot (`RedisClusterSlot.of(key:)`, or -1 for "any node") and goes to the slot's
/// primary; `RedisClusterAttempt` decides what follows each try (deliver, MOVED, ASK with `ASKING`,
/// retry within the command timeout, fail). Completions run on this loop and never inside `submit`.
///
/// Connections: one per primary of the map is opened as soon as the map names it (so readiness sees
/// every primary); connections to other nodes (an `ASK` target, a refresh candidate) are opened on
/// demand. After each new map, connections to nodes that are no longer primaries are closed once
/// nothing is pending on them. The loop's health (`onHealth`) is the worst health of the connections
/// to the current primaries (`connecting` while no map is known, `down` when the last refresh failed).
final class RedisClusterRouter: @unchecked Sendable {  // every mutable field is touched only on `loop.queue`
    /// Opens a connection to a node in a loop, reporting its health changes.
    typealias ConnectionFactory = (_ endpoint: RedisURL.Endpoint, _ loop: EventLoop,
                                   _ onHealth: @escaping @Sendable (RedisConnectionHealth, String) -> Void) -> RedisConnection

    /// The loop the router and its connections live in.
    let loop: EventLoop
    private let topology: RedisClusterTopology
    private let makeConnection: ConnectionFactory
    private let commandTimeout: UInt64
    private let onHealth: (@Sendable (RedisConnectionHealth, String) -> Void)?
    private var connections: [RedisURL.Endpoint: RedisConnection] = [:]
    private var nodeHealth: [RedisURL.Endpoint: (RedisConnectionHealth, String)] = [:]
    /// Which connection to each node is the current one (a closed one's late reports are ignored).
    private var connectionIDs: [RedisURL.Endpoint: UInt64] = [:]
    private var nextConnectionID: UInt64 = 0
    private var table = RedisSlotTable()
    /// The connection of each primary of `table`, by its index in `table.nodes` (no hashing per command).
    private var primaryConnections: [RedisConnection] = []
    private var generation: UInt64 = 0
    /// `topology.completedRefreshes` when a MOVED reply last patched `table` (nil: not patched since
    /// the last snapshot): the next refresh to end replaces the patch with the cluster's own map.
    private var patchedAt: UInt64?
    /// Delay before retrying a map refresh that failed while no map is known yet, nanoseconds.
    private var firstMapRetry: UInt64 = RedisClusterRouter.firstMapRetryStart
    private static let firstMapRetryStart: UInt64 = 100_000_000
    private static let firstMapRetryMaximum: UInt64 = 2_000_000_000
    private var reported = RedisConnectionHealth.connecting
    private var closed = false
    private var refreshToken: UInt64 = 0
    private var timer: DispatchSourceTimer?

    private static let asking: [UInt8] = Array("*1\r\n$6\r\nASKING\r\n".utf8)
    private static let clusterSlots: [UInt8] = Array("*2\r\n$7\r\nCLUSTER\r\n$5\r\nSLOTS\r\n".utf8)
    private static let ping: [UInt8] = Array("*1\r\n$4\r\nPING\r\n".utf8)

    /// - Parameters:
    ///   - commandTimeout: nanoseconds a command may take, retries included.
    ///   - refreshInterval: nanoseconds between timer-driven map refreshes (nil: no timer on this loop).
    init(loop: EventLoop, topology: RedisClusterTopology, commandTimeout: UInt64, refreshInterval: UInt64?,
         onHealth: (@Sendable (RedisConnectionHealth, String) -> Void)?, makeConnection: @escaping ConnectionFactory) {
        self.loop = loop
        self.topology = topology
        self.commandTimeout = commandTimeout
        self.onHealth = onHealth
        self.makeConnection = makeConnection
        topology.onPublish { [weak self] in
            guard let self else { return }
            self.loop.queue.async { self.syncTable() }
        }
        if let refreshInterval {
            let timer = DispatchSource.makeTimerSource(queue: loop.queue)
            timer.schedule(deadline: .now() + .nanoseconds(Int(refreshInterval)), repeating: .nanoseconds(Int(refreshInterval)),
                           leeway: .milliseconds(50))
            timer.setEventHandler { [weak self] in
                guard let self else { return }
                self.refresh()
                self.syncTable()
                self.closeStaleConnections()
            }
            timer.resume()
            self.timer = timer
        }
    }

    /// Fetches the first map.
    func start() { loop.queue.async { self.refresh() } }

    /// Closes every connection; later commands fail as `.closed`.
    func close() {
        loop.queue.async {
            self.closed = true
            self.timer?.cancel()
            self.timer = nil
            for connection in self.connections.values { connection.close() }
            self.connections.removeAll()
            self.report(.closed, "store closed")
        }
    }

    /// Sends a RESP-encoded command for `slot` (-1: any node). `completion` runs on the loop, once,
    /// never inside this call.
    func submit(slot: Int, bytes: [UInt8], onQueue: Bool, completion: @escaping RoutedCompletion) {
        guard onQueue else {
            loop.queue.async { self.submit(slot: slot, bytes: bytes, onQueue: true, completion: completion) }
            return
        }
        let attempt = RedisClusterAttempt(slot: slot, now: EventLoop.now(), timeout: commandTimeout)
        send(attempt, bytes, to: nil, asking: false, inline: true, completion)
    }

    /// PING on the connection to every current primary: success when each answered PONG.
    func pingPrimaries(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        loop.queue.async { [self] in
            syncTable()
            let primaries = table.primaries
            guard !closed, !primaries.isEmpty else {
                if !closed { refresh() }
                return completion(.failure(StoreUnavailable(closed ? .closed : .notConnected,
                                                            detail: topology.lastFailure ?? "no Redis Cluster map yet")))
            }
            // Every primary answers PING during CLUSTERDOWN: a slot without a primary is what says
            // that some requests cannot reach the store (cluster-require-full-coverage, the default,
            // makes the whole cluster refuse them then).
            guard table.coveredSlots == RedisClusterSlot.count else {
                refresh()
                return completion(.failure(StoreUnavailable(.notConnected,
                    detail: "\(RedisClusterSlot.count - table.coveredSlots) of \(RedisClusterSlot.count) slots have no primary in the cluster map")))
            }
            let gather = PingGather(count: primaries.count, completion: completion)
            for endpoint in primaries {
                connection(for: endpoint).submit(RedisClusterRouter.ping, onQueue: true) { result in
                    gather.put(result.flatMap { reply in reply.isText("PONG") ? .success(()) : .failure(RedisStore.unexpected(reply)) })
                }
            }
        }
    }

    /// The primaries of this loop's map (on the loop); while no map is known yet, waits for one (at
    /// most the command timeout).
    func primaries(completion: @escaping @Sendable ([RedisURL.Endpoint]) -> Void) {
        slotTable { completion($0.primaries) }
    }

    /// Why the last map request failed (`CLUSTER SLOTS` refused, no seed reachable), nil after a success.
    var mapFailure: String? { topology.lastFailure }

    /// The current slot map (waiting up to the command timeout for a first one; empty when none came).
    func slotTable(completion: @escaping @Sendable (RedisSlotTable) -> Void) {
        let deadline = EventLoop.now() &+ commandTimeout
        loop.queue.async { [self] in awaitTable(deadline: deadline, completion: completion) }
    }

    private func awaitTable(deadline: UInt64, completion: @escaping @Sendable (RedisSlotTable) -> Void) {
        syncTable()
        guard table.primaries.isEmpty, !closed, EventLoop.now() < deadline else { return completion(table) }
        refresh()
        loop.queue.asyncAfter(deadline: .now() + .milliseconds(10)) { [self] in awaitTable(deadline: deadline, completion: completion) }
    }

    /// Sends a command to one given node (no redirects followed).
    func submit(to endpoint: RedisURL.Endpoint, bytes: [UInt8], completion: @escaping RoutedCompletion) {
        loop.queue.async { [self] in
            guard !closed else { return completion(.failure(StoreUnavailable(.closed, detail: "store closed")), nil) }
            let connection = connection(for: endpoint)
            connection.submit(bytes, onQueue: true) { result in completion(result, connection) }
        }
    }

    // MARK: Routing

    private func send(_ attempt: RedisClusterAttempt, _ bytes: [UInt8], to target: RedisURL.Endpoint?, asking: Bool,
                      inline: Bool, _ completion: @escaping RoutedCompletion) {
        guard !closed else {
            return finish(.failure(StoreUnavailable(.closed, detail: "store closed")), nil, inline: inline, completion)
        }
        syncTable()
        var attempt = attempt
        let endpoint: RedisURL.Endpoint
        if let target {
            endpoint = target
        } else if attempt.slot < 0, let any = table.primaries.first ?? topology.seeds.first {
            endpoint = any
        } else if attempt.slot >= 0, case let index = table.slots[attempt.slot], index != RedisSlotTable.unassigned {
            // The common case: the slot's primary, its connection by index.
            let connection = primaryConnections[Int(index)]
            let host = RedisClusterRouter.host(table.nodes[Int(index)].endpoint)
            let sent = attempt
            connection.submit(bytes, onQueue: true) { [self] result in
                var attempt = sent
                let decision = attempt.decide(result, now: EventLoop.now(), fallbackHost: host)
                act(decision, attempt, bytes, result: result, connection: connection, inline: false, completion)
            }
            return
        } else {
            let decision = attempt.unrouted(now: EventLoop.now())
            return act(decision, attempt, bytes, result: nil, connection: nil, inline: inline, completion)
        }
        let connection = self.connection(for: endpoint)
        if asking { connection.submit(RedisClusterRouter.asking, onQueue: true) { _ in } }
        let host = RedisClusterRouter.host(endpoint)
        let sent = attempt
        connection.submit(bytes, onQueue: true) { [self] result in
            var attempt = sent
            let decision = attempt.decide(result, now: EventLoop.now(), fallbackHost: host)
            act(decision, attempt, bytes, result: result, connection: connection, inline: false, completion)
        }
    }

    private func act(_ decision: RedisClusterAttempt.Decision, _ attempt: RedisClusterAttempt, _ bytes: [UInt8],
                     result: Result<RedisReply, StoreUnavailable>?, connection: RedisConnection?, inline: Bool,
                     _ completion: @escaping RoutedCompletion) {
        switch decision {
        case .deliver:
            finish(result ?? .failure(StoreUnavailable(.protocolError, detail: "no reply")), connection, inline: inline, completion)
        case .moved(let slot, let endpoint):
            table.move(slot: slot, to: endpoint)
            if patchedAt == nil { patchedAt = topology.completedRefreshes }
            ensurePrimaryConnections()
            refresh()
            send(attempt, bytes, to: endpoint, asking: false, inline: inline, completion)
        case .ask(let endpoint):
            send(attempt, bytes, to: endpoint, asking: true, inline: inline, completion)
        case .retry(let delay, let refresh):
            if refresh { self.refresh() }
            loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
                send(attempt, bytes, to: nil, asking: false, inline: false, completion)
            }
        case .fail(let error, let refresh):
            if refresh { self.refresh() }
            finish(.failure(error), nil, inline: inline, completion)
        }
    }

    private func finish(_ result: Result<RedisReply, StoreUnavailable>, _ connection: RedisConnection?, inline: Bool,
                        _ completion: @escaping RoutedCompletion) {
        if inline {
            loop.queue.async { completion(result, connection) }
        } else {
            completion(result, connection)
        }
    }

    // MARK: Map

    /// Starts a map refresh from this loop unless one is in flight or one started very recently.
    private func refresh() {
        guard !closed, topology.beginRefresh(now: EventLoop.now()) else { return }
        refreshToken &+= 1
        tryRefresh(topology.candidates(), index: 0, token: refreshToken, lastError: "no node to ask")
    }

    private func tryRefresh(_ candidates: [RedisURL.Endpoint], index: Int, token: UInt64, lastError: String) {
        guard token == refreshToken else { return }
        guard !closed, index < candidates.count else {
            topology.refreshFailed("cluster map: " + lastError)
            recomputeHealth()
            // No map yet (start-up, or every node down since): try again soon, backing off, rather
            // than only at the next timer refresh (5 s by default) or request.
            if table.primaries.isEmpty && !closed {
                let delay = firstMapRetry
                firstMapRetry = min(firstMapRetry * 2, RedisClusterRouter.firstMapRetryMaximum)
                loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(delay))) { [self] in
                    syncTable()
                    if table.primaries.isEmpty { refresh() }
                }
            }
            return
        }
        let endpoint = candidates[index]
        connection(for: endpoint).submit(RedisClusterRouter.clusterSlots, onQueue: true) { [self] result in
            let problem: String
            switch result {
            case .success(let reply):
                do throws(RedisSlotTable.ParseError) {
                    let table = try RedisSlotTable(clusterSlots: reply, fallbackHost: RedisClusterRouter.host(endpoint))
                    if table.coveredSlots > 0 {
                        guard token == refreshToken else { return }
                        topology.publish(table)
                        syncTable()
                        return
                    }
                    problem = "\(RedisURL.hostPort(endpoint)) serves no slot"
                } catch {
                    problem = "\(RedisURL.hostPort(endpoint)): \(error)"
                }
                if case .error(let message) = reply {
                    return tryRefresh(candidates, index: index + 1, token: token,
                                      lastError: "\(RedisURL.hostPort(endpoint)): " + String(decoding: message, as: UTF8.self))
                }
            case .failure(let error):
                problem = "\(RedisURL.hostPort(endpoint)): \(error)"
            }
            tryRefresh(candidates, index: index + 1, token: token, lastError: problem)
        }
    }

    /// Takes the shared map when it is newer than this loop's copy.
    private func syncTable() {
        guard !closed else { return }
        let latest = topology.generation
        let patchOutdated = patchedAt.map { topology.completedRefreshes > $0 } ?? false
        if latest != generation || patchOutdated {
            (table, generation) = topology.snapshot()
            patchedAt = nil
            if !table.primaries.isEmpty { firstMapRetry = RedisClusterRouter.firstMapRetryStart }
            ensurePrimaryConnections()
            closeStaleConnections()
        }
        recomputeHealth()
    }

    private func ensurePrimaryConnections() {
        primaryConnections = table.primaries.map { connection(for: $0) }
    }

    /// Closes idle connections to nodes that are no longer primaries (and are not seeds).
    private func closeStaleConnections() {
        let primaries = Set(table.primaries.map(RedisURL.hostPort))
        for (endpoint, connection) in connections where !primaries.contains(RedisURL.hostPort(endpoint)) {
            guard connection.pendingOnQueue == 0 else { continue }
            connection.close()
            connections[endpoint] = nil
            nodeHealth[endpoint] = nil
            connectionIDs[endpoint] = nil
        }
    }

    private func connection(for endpoint: RedisURL.Endpoint) -> RedisConnection {
        if let existing = connections[endpoint] { return existing }
        nextConnectionID &+= 1
        let id = nextConnectionID
        connectionIDs[endpoint] = id
        let made = makeConnection(endpoint, loop) { [weak self] health, detail in
            // Runs on the loop's queue (RedisConnection reports there).
            guard let self, self.connectionIDs[endpoint] == id else { return }
            self.nodeHealth[endpoint] = (health, detail)
            if health == .down { self.refresh() }
            self.recomputeHealth()
        }
        connections[endpoint] = made
        nodeHealth[endpoint] = (.connecting, "")
        made.start()
        return made
    }

    // MARK: Health

    private func recomputeHealth() {
        guard !closed else { return }
        let primaries = table.primaries
        if primaries.isEmpty {
            if let failure = topology.lastFailure { return report(.down, failure) }
            return report(reported == .down ? .down : .connecting, "no Redis Cluster map yet")
        }
        var worst = RedisConnectionHealth.ready
        var detail = ""
        for endpoint in primaries {
            let (health, why) = nodeHealth[endpoint] ?? (.connecting, "")
            switch health {
            case .down, .closed:
                worst = .down
                detail = "\(RedisURL.hostPort(endpoint)): \(why)"
            case .connecting:
                if worst == .ready { worst = .connecting }
            case .ready:
                break
            }
        }
        if worst == .connecting && reported == .down { worst = .down }
        report(worst, detail)
    }

    private func report(_ health: RedisConnectionHealth, _ detail: String) {
        guard health != reported else { return }
        reported = health
        onHealth?(health, detail)
    }

    /// The host of a TCP endpoint (for redirects that name none).
    static func host(_ endpoint: RedisURL.Endpoint) -> String {
        if case .tcp(let host, _) = endpoint { return host }
        return ""
    }
}
