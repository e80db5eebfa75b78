import GatewayStore
import Synchronization

/// A bounded in-process cache of parsed public keys by keyId, so that a request for a known key
/// needs one store round trip (the commit) instead of two (fetch + commit).
///
/// Per event loop: one shard per loop, each behind its own `Mutex` that only its loop takes on the
/// request path (uncontended: no lock or cache line shared across cores per request). A key learnt
/// on one loop (fetched from the store) is cached in that loop's shard; a key attested through the
/// endpoint is put into every shard (rare, off the request path); a key the store no longer knows is
/// removed from every shard. Bounded per shard: when full, an arbitrary half of its entries is
/// dropped (cheap, and a miss only costs one extra store read).
final class KeyCache: Sendable {
    private let shards: PerLoop<[KeyID: CachedKey]>
    /// Maximum number of entries per shard.
    let capacity: Int

    /// A cache of `shards` shards (one per event loop) holding at most `capacity` keys each.
    init(shards: Int = 1, capacity: Int = 100_000) {
        self.capacity = max(1, capacity)
        self.shards = PerLoop(count: shards) { [:] }
    }

    /// The cached key for `keyId` in the shard of loop `shard`, or nil.
    func get(_ keyId: KeyID, shard: Int) -> CachedKey? {
        shards.withShard(shard) { $0[keyId] }
    }

    /// Stores `key` for `keyId` in the shard of loop `shard`, or in every shard when `shard` is nil.
    func put(_ keyId: KeyID, _ key: CachedKey, shard: Int?) {
        let capacity = self.capacity
        if let shard {
            shards.withShard(shard) { KeyCache.put(keyId, key, into: &$0, capacity: capacity) }
        } else {
            shards.forEach { KeyCache.put(keyId, key, into: &$0, capacity: capacity) }
        }
    }

    private static func put(_ keyId: KeyID, _ key: CachedKey, into dict: inout [KeyID: CachedKey], capacity: Int) {
        if dict.count >= capacity {
            var dropped = 0
            for k in dict.keys where dropped < capacity / 2 {
                dict.removeValue(forKey: k)
                dropped += 1
            }
        }
        dict[keyId] = key
    }

    /// Forgets `keyId` in every shard (after the store said it no longer exists).
    func remove(_ keyId: KeyID) {
        shards.forEach { _ = $0.removeValue(forKey: keyId) }
    }

    /// Cached entries summed over the shards (a key cached by two loops counts twice: it is held twice).
    var count: Int {
        var total = 0
        shards.forEach { total += $0.count }
        return total
    }
}
