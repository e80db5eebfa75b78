#if canImport(Glibc)
import Glibc
#endif

/// The gateway's source of wall-clock time, injected so tests can move time (challenge expiry,
/// attestation validation time).
public struct GatewayClock: Sendable {
    /// Current time, milliseconds since the Unix epoch.
    public let now: @Sendable () -> Int64

    /// A clock reading `now`.
    public init(now: @escaping @Sendable () -> Int64) { self.now = now }

    /// The system's real-time clock (`CLOCK_REALTIME`).
    public static let system = GatewayClock {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// A monotonic reading in nanoseconds, for latencies (`CLOCK_MONOTONIC`).
    public static func monotonicNanoseconds() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}
