import GatewayRedis
import GatewayStore

/// `VerdictKeyStore` in the gateway's Redis: the fleet's key set under its `store_key`
/// (`RedisStore.fetchVersionedDocument` / `replaceVersionedDocument`, a compare-and-set script).
struct RedisVerdictKeyStore: VerdictKeyStore {
    let redis: RedisStore

    func load(key: String, completion: @escaping @Sendable (Result<(version: Int64, document: [UInt8])?, StoreUnavailable>) -> Void) {
        redis.fetchVersionedDocument(key: Array(key.utf8), completion: completion)
    }

    func replace(key: String, expected: Int64, document: [UInt8], completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        redis.replaceVersionedDocument(key: Array(key.utf8), expected: expected, document: document, completion: completion)
    }
}
