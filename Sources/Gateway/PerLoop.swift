import Synchronization

/// State kept once per event loop, so that request-path updates never share a lock or a cache line
/// across cores: shard `i` belongs to loop `i` (`HTTPConnectionInfo.loopIndex`), which is the only
/// one to take its lock on the request path (uncontended); readers that need the whole picture (a
/// metrics scrape, a log flush, a rare write to every shard) take each shard's lock in turn.
final class PerLoop<Value: Sendable>: Sendable {
    /// One loop's value behind its own lock.
    private final class Shard: Sendable {
        let state: Mutex<Value>
        init(_ value: Value) { state = Mutex(value) }
    }

    private let shards: [Shard]

    /// `count` shards (at least one), each starting as `initial()`.
    init(count: Int, _ initial: () -> Value) {
        shards = (0..<max(1, count)).map { _ in Shard(initial()) }
    }

    /// Number of shards.
    var count: Int { shards.count }

    /// Runs `body` on the value of loop `index` (an index past the end wraps around).
    @inline(__always)
    func withShard<R>(_ index: Int, _ body: (inout sending Value) -> sending R) -> R {
        shards[index % shards.count].state.withLock { body(&$0) }
    }

    /// Runs `body` on every shard's value in turn (each under its own lock).
    func forEach(_ body: (inout sending Value) -> Void) {
        for shard in shards { shard.state.withLock { body(&$0) } }
    }
}
