import Synchronization

/// A monotonic clock moved by hand (nanoseconds).
final class ManualClock: Sendable {
    private let value = Mutex<UInt64>(1_000_000_000)
    var now: UInt64 { value.withLock { $0 } }
    func advance(seconds: Int) { value.withLock { $0 += UInt64(seconds) * 1_000_000_000 } }
    var function: @Sendable () -> UInt64 { { self.now } }
}
