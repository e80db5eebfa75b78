import GatewayRules
import Synchronization

/// The slot map of one Redis Cluster shared by the store's per-loop routers (`RedisClusterRouter`):
/// the latest `RedisSlotTable`, a generation number each loop compares with its own copy (one relaxed
/// atomic load per command), and the bookkeeping that keeps map refreshes to one at a time.
///
/// A refresh (`CLUSTER SLOTS` on one node) is asked for on redirects, on CLUSTERDOWN, when a node is
/// down or a slot has no primary, and on a timer; `beginRefresh` grants it when none is in flight and
/// the last one started at least `minimumInterval` ago.
final class RedisClusterTopology: Sendable {
    private struct State {
        var table = RedisSlotTable()
        var generation: UInt64 = 0
        var refreshing = false
        var lastRefreshStart: UInt64?
        var lastFailure: String?
        var listeners: [@Sendable () -> Void] = []
    }

    /// The seed nodes of the URL.
    let seeds: [RedisURL.Endpoint]
    /// Nanoseconds between two refresh starts at least.
    let minimumInterval: UInt64
    private let state = Mutex(State())
    private let published = Atomic<UInt64>(0)
    private let refreshed = Atomic<UInt64>(0)

    init(seeds: [RedisURL.Endpoint], minimumInterval: UInt64 = 50_000_000) {
        self.seeds = seeds
        self.minimumInterval = minimumInterval
    }

    /// The generation of the latest map (0: none yet).
    var generation: UInt64 { published.load(ordering: .acquiring) }

    /// Refreshes that ended with a map, whether it changed or not: a loop whose copy a MOVED reply
    /// patched takes the shared map again once one more refresh ended (`RedisClusterRouter`), even when
    /// the cluster's map did not change (the patch was wrong: the generation alone never moves then).
    var completedRefreshes: UInt64 { refreshed.load(ordering: .acquiring) }

    /// The latest map and its generation.
    func snapshot() -> (table: RedisSlotTable, generation: UInt64) {
        state.withLock { ($0.table, $0.generation) }
    }

    /// Why the last refresh failed, nil when it succeeded (or none ran yet).
    var lastFailure: String? { state.withLock { $0.lastFailure } }

    /// Runs `listener` (on an arbitrary thread) each time a new map is published.
    func onPublish(_ listener: @escaping @Sendable () -> Void) {
        state.withLock { $0.listeners.append(listener) }
    }

    /// Whether the caller may start a refresh now (then it must end it with `publish` or `refreshFailed`).
    func beginRefresh(now: UInt64) -> Bool {
        state.withLock { s in
            if s.refreshing { return false }
            if let last = s.lastRefreshStart, now &- last < minimumInterval { return false }
            s.refreshing = true
            s.lastRefreshStart = now
            return true
        }
    }

    /// Nodes to ask for the map, in order: current primaries, their replicas, then the seeds.
    func candidates() -> [RedisURL.Endpoint] {
        let table = state.withLock { $0.table }
        var out: [RedisURL.Endpoint] = []
        let replicas = table.nodes.flatMap { $0.replicas }
        for endpoint in table.primaries + replicas + seeds where !out.contains(endpoint) {
            out.append(endpoint)
        }
        return out
    }

    /// Ends a refresh with a new map; listeners run when it differs from the previous one.
    func publish(_ table: RedisSlotTable) {
        let listeners: [@Sendable () -> Void] = state.withLock { s in
            s.refreshing = false
            s.lastFailure = nil
            refreshed.add(1, ordering: .releasing)
            guard table != s.table else { return [] }
            s.table = table
            s.generation += 1
            published.store(s.generation, ordering: .releasing)
            return s.listeners
        }
        for listener in listeners { listener() }
    }

    /// Ends a refresh that found no node able to answer.
    func refreshFailed(_ detail: String) {
        state.withLock { s in
            s.refreshing = false
            s.lastFailure = detail
        }
    }
}
