import GatewayStore
import Synchronization

/// A bounded in-process cache of parsed public keys by keyId, so that a request for a known key
/// needs one store round trip (the commit) instead of two (fetch + commit).
///
/// Thread-safe (one `Mutex`). Bounded: when full, an arbitrary half of the entries is dropped
/// (cheap, and a miss only costs one extra store read).
final class KeyCache: Sendable {
    private let entries: Mutex<[KeyID: CachedKey]>
    /// Maximum number of entries.
    let capacity: Int

    /// A cache holding at most `capacity` keys.
    init(capacity: Int = 100_000) {
        self.capacity = max(1, capacity)
        entries = Mutex([:])
    }

    /// The cached key for `keyId`, or nil.
    func get(_ keyId: KeyID) -> CachedKey? { entries.withLock { $0[keyId] } }

    /// Stores `key` for `keyId`.
    func put(_ keyId: KeyID, _ key: CachedKey) {
        entries.withLock { dict in
            if dict.count >= capacity {
                var dropped = 0
                for k in dict.keys where dropped < capacity / 2 {
                    dict.removeValue(forKey: k)
                    dropped += 1
                }
            }
            dict[keyId] = key
        }
    }

    /// Forgets `keyId` (after the store said it no longer exists).
    func remove(_ keyId: KeyID) { _ = entries.withLock { $0.removeValue(forKey: keyId) } }

    /// Number of cached keys.
    var count: Int { entries.withLock { $0.count } }
}
