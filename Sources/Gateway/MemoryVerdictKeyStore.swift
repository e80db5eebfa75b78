import GatewayStore
import Synchronization

/// `VerdictKeyStore` in memory, for the memory attest store (one process): completes synchronously.
/// Thread-safe: the documents are behind a `Mutex`.
final class MemoryVerdictKeyStore: VerdictKeyStore {
    private let documents = Mutex<[String: (version: Int64, document: [UInt8])]>([:])

    /// One per attest store (by identity), so that tables rebuilt by a reload find the same key set.
    private static let byStore = Mutex<[ObjectIdentifier: MemoryVerdictKeyStore]>([:])

    static func shared(for store: any AttestStore) -> MemoryVerdictKeyStore {
        byStore.withLock { all in
            let id = ObjectIdentifier(store)
            if let found = all[id] { return found }
            let made = MemoryVerdictKeyStore()
            all[id] = made
            return made
        }
    }

    func load(key: String, completion: @escaping @Sendable (Result<(version: Int64, document: [UInt8])?, StoreUnavailable>) -> Void) {
        let found = documents.withLock { $0[key] }
        completion(.success(found))
    }

    func replace(key: String, expected: Int64, document: [UInt8], completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        let written = documents.withLock { all -> Bool in
            guard (all[key]?.version ?? 0) == expected else { return false }
            all[key] = (expected + 1, document)
            return true
        }
        completion(.success(written))
    }
}
