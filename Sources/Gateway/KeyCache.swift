import GatewayIO
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
///
/// Bounded in age too: an entry older than `maximumAge` is a miss (and dropped), so what another
/// gateway or `attestctl` changed in the store reaches this one within that time. The commit checks
/// a key's status and expiry in the store on every request anyway; the age bounds what only the
/// cached record says: a device key's tier, app and integrity after it was forgotten and registered
/// again elsewhere (a probe saw one replica keep serving a re-registered key's old `attested` tier
/// until restart), and the challenges handed to a key an operator revoked.
final class KeyCache: Sendable {
    private struct Entry {
        let key: CachedKey
        /// Monotonic nanoseconds when the key was cached.
        let cachedAt: UInt64
    }

    private let shards: PerLoop<[KeyID: Entry]>
    /// Maximum number of entries per shard.
    let capacity: Int
    /// Nanoseconds an entry is used for at most.
    let maximumAge: UInt64
    private let now: @Sendable () -> UInt64

    /// Entries are used for 60 s at most by default.
    static let defaultMaximumAge: UInt64 = 60_000_000_000

    /// A cache of `shards` shards (one per event loop) holding at most `capacity` keys each, each for
    /// at most `maximumAge` nanoseconds of `now` (monotonic nanoseconds: the event loops' clock).
    init(shards: Int = 1, capacity: Int = 100_000, maximumAge: UInt64 = KeyCache.defaultMaximumAge,
         now: @escaping @Sendable () -> UInt64 = { EventLoop.now() }) {
        self.capacity = max(1, capacity)
        self.maximumAge = maximumAge
        self.now = now
        self.shards = PerLoop(count: shards) { [:] }
    }

    /// The cached key for `keyId` in the shard of loop `shard`, or nil (never cached, dropped, or
    /// older than `maximumAge`).
    func get(_ keyId: KeyID, shard: Int) -> CachedKey? {
        let now = self.now()
        let maximumAge = self.maximumAge
        return shards.withShard(shard) { dict -> CachedKey? in
            guard let entry = dict[keyId] else { return nil }
            guard now &- entry.cachedAt < maximumAge else {
                dict.removeValue(forKey: keyId)
                return nil
            }
            return entry.key
        }
    }

    /// Stores `key` for `keyId` in the shard of loop `shard`, or in every shard when `shard` is nil.
    func put(_ keyId: KeyID, _ key: CachedKey, shard: Int?) {
        let capacity = self.capacity
        let entry = Entry(key: key, cachedAt: now())
        if let shard {
            shards.withShard(shard) { KeyCache.put(keyId, entry, into: &$0, capacity: capacity) }
        } else {
            shards.forEach { KeyCache.put(keyId, entry, into: &$0, capacity: capacity) }
        }
    }

    private static func put(_ keyId: KeyID, _ key: Entry, into dict: inout [KeyID: Entry], capacity: Int) {
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
