import Foundation

extension NSLock {
    /// Runs `body` holding the lock (Foundation's `withLock` needs iOS 16 / macOS 13; the SDK runs on iOS 14).
    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock()
        defer { unlock() }
        return try body()
    }
}
