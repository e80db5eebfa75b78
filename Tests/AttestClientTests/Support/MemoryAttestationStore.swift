import AttestClient
import Foundation

/// An in-memory `AttestationStore` that records removals (a "relaunch" is a new client on the same store).
final class MemoryAttestationStore: AttestationStore, @unchecked Sendable {  // `items` and `removals` guarded by `lock`
    private let lock = NSLock()
    private var items: [String: Data] = [:]
    private var removedNames: [String] = []

    func data(for name: String) -> Data? { lock.withLock { items[name] } }
    func set(_ data: Data?, for name: String) throws {
        lock.withLock {
            if data == nil && items[name] != nil { removedNames.append(name) }
            items[name] = data
        }
    }
    var removals: [String] { lock.withLock { removedNames } }
    func json(_ name: String) -> [String: Any]? {
        data(for: name).flatMap { (try? JSONSerialization.jsonObject(with: $0)) as? [String: Any] }
    }
}
