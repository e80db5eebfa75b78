// One endpoint of an upstream as every event loop sees it: addresses, load, passive and active health.

import GatewayIO
import Synchronization

/// The shared state of one configured endpoint of an upstream (`http://host:port`, `unix:/path`):
/// its resolved addresses (replaced by DNS re-resolution off the event loops), the exchanges in
/// progress on it (least-request balancing), its connect error streak and ejection (passive health,
/// `UpstreamEjection`) and its active health-check verdict (`UpstreamHealthCheck`).
///
/// Thread-safe: counters and flags are atomics (read on every pick, relaxed: a pick that sees a
/// value one event late is harmless); the address list sits behind a `Mutex`, read only when a new
/// connection is opened.
final class UpstreamEndpointState: Sendable {
    /// Position in the upstream's endpoint list.
    let index: Int
    /// As configured.
    let endpoint: SocketEndpoint
    /// The TLS server name (SNI and certificate check) for this endpoint, nil for plain.
    let serverName: String?
    /// `host:port` or `unix:/path`, for logs.
    var label: String { endpoint.description }

    private let addresses = Mutex<[SocketAddress]>([])
    private let addressCursor = Atomic<Int>(0)
    private let addressCount = Atomic<Int>(0)
    /// Exchanges in progress on this endpoint, across loops.
    let active = Atomic<Int>(0)
    private let consecutiveErrors = Atomic<Int>(0)
    private let ejectedUntil = Atomic<UInt64>(0)
    private let ejectionsInARow = Atomic<Int>(0)
    private let healthyFlag = Atomic<Bool>(true)
    private let healthStreak = Atomic<Int>(0)

    init(index: Int, endpoint: SocketEndpoint, serverName: String?) {
        self.index = index
        self.endpoint = endpoint
        self.serverName = serverName
    }

    // MARK: addresses

    /// Whether at least one address is known.
    var isResolved: Bool { addressCount.load(ordering: .relaxed) > 0 }

    /// The addresses now known.
    var resolvedAddresses: [SocketAddress] { addresses.withLock { $0 } }

    /// Replaces the addresses (after a resolution). Returns whether they changed (as text).
    @discardableResult
    func setAddresses(_ new: [SocketAddress]) -> Bool {
        let changed = addresses.withLock { current -> Bool in
            let changed = current.map(\.description) != new.map(\.description)
            current = new
            return changed
        }
        addressCount.store(new.count, ordering: .relaxed)
        return changed
    }

    /// The address for the next connection: the resolved addresses in turn; nil when none is known.
    func nextAddress() -> SocketAddress? {
        addresses.withLock { list in
            guard !list.isEmpty else { return nil }
            let i = addressCursor.wrappingAdd(1, ordering: .relaxed).oldValue
            return list[(i % list.count + list.count) % list.count]
        }
    }

    // MARK: availability

    /// Resolved, not ejected at `now` (monotonic nanoseconds), not marked down by health checks.
    func isAvailable(now: UInt64) -> Bool {
        isResolved && healthyFlag.load(ordering: .relaxed) && now >= ejectedUntil.load(ordering: .relaxed)
    }

    /// Whether ejected at `now`.
    func isEjected(now: UInt64) -> Bool { now < ejectedUntil.load(ordering: .relaxed) }

    /// The active health-check verdict (true until a check says otherwise).
    var isHealthy: Bool { healthyFlag.load(ordering: .relaxed) }

    // MARK: passive health

    /// A connection to this endpoint was established: the error streak ends.
    func connected() {
        if consecutiveErrors.load(ordering: .relaxed) != 0 { consecutiveErrors.store(0, ordering: .relaxed) }
        if ejectionsInARow.load(ordering: .relaxed) != 0 { ejectionsInARow.store(0, ordering: .relaxed) }
    }

    /// A connection attempt failed at `now`. Returns the ejection time in seconds when this failure
    /// ejects the endpoint, else nil.
    func connectFailed(now: UInt64, policy: UpstreamEjection) -> Double? {
        guard policy.consecutiveErrors > 0 else { return nil }
        let errors = consecutiveErrors.wrappingAdd(1, ordering: .relaxed).newValue
        // Ejected again as soon as the first attempt after an ejection fails; else at the threshold.
        let rejoined = ejectionsInARow.load(ordering: .relaxed) > 0
        guard errors >= policy.consecutiveErrors || rejoined, !isEjected(now: now) else { return nil }
        let n = ejectionsInARow.wrappingAdd(1, ordering: .relaxed).newValue
        let seconds = policy.ejectionTime(n)
        ejectedUntil.store(now &+ UInt64(seconds * 1e9), ordering: .relaxed)
        consecutiveErrors.store(0, ordering: .relaxed)
        return seconds
    }

    // MARK: active health

    /// Records one health-check result; returns the new verdict when it changed (after `healthy`
    /// successes in a row for a down endpoint, `unhealthy` failures in a row for an up one).
    func recordCheck(passed: Bool, healthyThreshold: Int, unhealthyThreshold: Int) -> Bool? {
        let up = healthyFlag.load(ordering: .relaxed)
        if passed == up {
            healthStreak.store(0, ordering: .relaxed)
            return nil
        }
        let streak = healthStreak.wrappingAdd(1, ordering: .relaxed).newValue
        guard streak >= (up ? unhealthyThreshold : healthyThreshold) else { return nil }
        healthStreak.store(0, ordering: .relaxed)
        healthyFlag.store(passed, ordering: .relaxed)
        if passed { connected() }
        return passed
    }
}
