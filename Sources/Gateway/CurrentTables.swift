import GatewayIO
import Synchronization

/// The route tables in force (`GatewayTables`), swapped by a reload and read by every request without
/// a lock: each event loop keeps its own reference to the generation it last used and compares its
/// number with one atomic generation counter (a relaxed-cost acquire load per request); only when a
/// reload moved the counter does the loop take the lock once to pick up the new tables.
///
/// After a swap every loop is asked to refresh at once, so that an idle loop does not keep the old
/// generation (and its retired upstream pools) alive until its next request.
final class CurrentTables: @unchecked Sendable {  // `latest` behind its Mutex; `caches[i]` only touched on loop i's queue (checked with `inEventLoop`), `version` atomic
    /// The generation a loop last used (mutated on that loop's queue only).
    private final class LoopCache {
        var tables: GatewayTables
        var generation: UInt64
        init(_ tables: GatewayTables) {
            self.tables = tables
            generation = tables.generation
        }
    }

    private let latest: Mutex<GatewayTables>
    private let version: Atomic<UInt64>
    private let loops: [EventLoop]
    private let caches: [LoopCache]

    /// `tables` in force for the connections of `loops`.
    init(_ tables: GatewayTables, loops: [EventLoop]) {
        latest = Mutex(tables)
        version = Atomic(tables.generation)
        self.loops = loops
        caches = loops.map { _ in LoopCache(tables) }
    }

    /// The tables for a request on loop `loopIndex` (a caller not on that loop's queue, such as a
    /// test driving the handler directly, gets them under the lock).
    @inline(__always)
    func current(loopIndex: Int) -> GatewayTables {
        let generation = version.load(ordering: .acquiring)
        guard loopIndex >= 0, loopIndex < caches.count, loops[loopIndex].inEventLoop else { return latest.withLock { $0 } }
        let cache = caches[loopIndex]
        if cache.generation == generation { return cache.tables }
        let tables = latest.withLock { $0 }
        cache.tables = tables
        cache.generation = tables.generation
        return tables
    }

    /// The tables in force (under the lock: for rare paths such as error pages and reloads).
    var latestTables: GatewayTables { latest.withLock { $0 } }

    /// Puts `tables` in force for requests whose head arrives from now on.
    func replace(with tables: GatewayTables) {
        latest.withLock { $0 = tables }
        version.store(tables.generation, ordering: .releasing)
        for loop in loops {
            let index = loop.index
            loop.execute { [self] in _ = current(loopIndex: index) }
        }
    }
}
