import GatewayRedis
import GatewayStore

/// Where a fleet keeps its generated verdict-signing key set (`VerdictKeyRotation.encoded()`): one
/// versioned document per `verdict_token.store_key`, replaced only by compare-and-set, so replicas
/// agree on the first set created and on every rotation (issue 12).
protocol VerdictKeyStore: Sendable {
    /// The document and its version (>= 1); nil when there is none yet.
    func load(key: String, completion: @escaping @Sendable (Result<(version: Int64, document: [UInt8])?, StoreUnavailable>) -> Void)
    /// Writes `document` as version `expected + 1` if the stored version is still `expected` (0: none).
    /// Completes with false when another replica wrote first.
    func replace(key: String, expected: Int64, document: [UInt8], completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void)
}

/// The key-set store that goes with an attest store: Redis for a `RedisStore` (the fleet's), else
/// one in memory per attest store (a single process).
enum VerdictKeyStores {
    static func make(for store: any AttestStore) -> any VerdictKeyStore {
        var inner = store
        if let measured = inner as? MeasuredStore { inner = measured.inner }
        if let redis = inner as? RedisStore { return RedisVerdictKeyStore(redis: redis) }
        return MemoryVerdictKeyStore.shared(for: inner)
    }
}
