import Synchronization

/// How many objects of one kind are alive (debug builds count the downstream objects an upstream
/// exchange holds while it runs: `HTTPServerContext.liveSinks`), so that tests can tell that none
/// is kept alive by a reference cycle once its connection closed. Thread-safe (an atomic).
final class LiveObjectCount: Sendable {
    private let count = Atomic<Int>(0)

    /// Objects alive now.
    var value: Int { count.load(ordering: .acquiring) }

    func increment() { count.add(1, ordering: .relaxed) }
    func decrement() { count.subtract(1, ordering: .releasing) }
}
