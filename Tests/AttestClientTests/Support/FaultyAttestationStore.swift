import AttestClient
import Foundation

/// The harness's memory store with injected faults: an operation on an item throws the error `fault`
/// returns for it (a failing read also makes `data(for:)` answer nil, as a store that cannot tell
/// "absent" from "unreadable" does). Without a fault it is `inner`.
final class FaultyAttestationStore: AttestationStore, @unchecked Sendable {  // `injected` guarded by `lock`
    enum Operation { case read, write }

    let inner = MemoryAttestationStore()
    private let lock = NSLock()
    private var injected: @Sendable (Operation, String) -> (any Error)? = { _, _ in nil }

    /// The error `operation` on the item `name` throws; nil lets it through (the default).
    var fault: @Sendable (Operation, String) -> (any Error)? {
        get { lock.withLock { injected } }
        set { lock.withLock { injected = newValue } }
    }

    func data(for name: String) -> Data? { fault(.read, name) == nil ? inner.data(for: name) : nil }
    func read(_ name: String) throws -> Data? {
        if let error = fault(.read, name) { throw error }
        return inner.data(for: name)
    }
    func set(_ data: Data?, for name: String) throws {
        if let error = fault(.write, name) { throw error }
        try inner.set(data, for: name)
    }
}
