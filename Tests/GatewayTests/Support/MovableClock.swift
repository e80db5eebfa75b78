import Gateway
import Synchronization

/// A wall clock the tests can move forward (challenge expiry) and back to real time.
/// Thread-safe: the offset is an `Atomic`.
final class MovableClock: Sendable {
    private let offsetMillis = Atomic<Int64>(0)

    /// The `GatewayClock` handed to `GatewayRuntime`: real time plus the current offset.
    var gatewayClock: GatewayClock { GatewayClock { [self] in now() } }

    /// Real time plus the offset, unix milliseconds.
    func now() -> Int64 { GatewayClock.system.now() + offsetMillis.load(ordering: .acquiring) }

    /// Moves the clock forward by `seconds`.
    func advance(seconds: Int64) { offsetMillis.add(seconds * 1000, ordering: .acquiringAndReleasing) }

    /// Back to real time.
    func reset() { offsetMillis.store(0, ordering: .releasing) }
}
