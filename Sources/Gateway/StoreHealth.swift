import GatewayIO
import GatewayRedis
import Synchronization

/// The store's health as readiness, metrics and the outage log see it (DESIGN.md section 10, issue 9
/// "Readiness that matches the routes"): the health of each event loop's Redis connection, as
/// `RedisStore` reports it, and whether an outage is in progress.
///
/// - An outage starts when a connection goes `down` (connect refused, connection lost, handshake or
///   command timeout) while none is in progress: one lifecycle line `store_unavailable` (fields
///   `connections_down` as `k/n` and `detail`, the last error: host names and Redis error words, never
///   a password) and `attest_gateway_store_outages_total` + 1.
/// - It ends when every connection is `ready` again: one line `store_recovered` (`duration_ms`,
///   `connections`). Reconnect attempts in between log nothing.
/// - `summary`: `ok` (every connection ready), `connecting` (not ready yet, no failure), `unavailable`
///   (some connection down). A stable word: `/readyz` shows it to unauthenticated callers, so it
///   never carries error text.
///
/// The memory store (or an injected one) is not tracked: `summary` is always `ok`.
final class StoreHealth: Sendable {
    /// The store's state in one stable word (`/readyz` body).
    enum Summary: String, Sendable {
        case ok, connecting, unavailable
    }

    private struct State {
        var connections: [RedisConnectionHealth]
        /// Monotonic nanoseconds when the outage in progress started.
        var outageSince: UInt64?
        var outages: UInt64 = 0
    }

    /// Whether a Redis store reports into this (false: memory or injected store).
    let tracked: Bool
    private let state: Mutex<State>
    private let events: RateLimitedEvents.Sink
    private let now: @Sendable () -> UInt64

    /// - Parameters:
    ///   - connections: the Redis store's connections (one per event loop); 0 when untracked.
    ///   - events: lifecycle lines (`store_unavailable`, `store_recovered`), written under the lock so
    ///     that they come out in order; the sink must not call back into this object.
    ///   - now: monotonic nanoseconds (outage duration).
    init(connections: Int, tracked: Bool, events: @escaping RateLimitedEvents.Sink,
         now: @escaping @Sendable () -> UInt64 = { EventLoop.now() }) {
        self.tracked = tracked
        state = Mutex(State(connections: Array(repeating: .connecting, count: tracked ? connections : 0)))
        self.events = events
        self.now = now
    }

    /// A connection's new health (`RedisStore.Configuration.onConnectionHealth`).
    func update(connection index: Int, health: RedisConnectionHealth, detail: String) {
        let t = now()
        let events = self.events
        state.withLock { s in
            guard s.connections.indices.contains(index) else { return }
            s.connections[index] = health
            if health == .closed { return }
            let count = s.connections.count
            if s.outageSince == nil, health == .down {
                s.outageSince = t
                s.outages += 1
                let down = s.connections.filter { $0 == .down }.count
                events("store_unavailable", [("connections_down", "\(down)/\(count)"), ("detail", detail)])
            } else if let since = s.outageSince, s.connections.allSatisfy({ $0 == .ready }) {
                s.outageSince = nil
                events("store_recovered", [("duration_ms", String((t &- since) / 1_000_000)), ("connections", String(count))])
            }
        }
    }

    /// The store's state in one word.
    var summary: Summary {
        state.withLock { s in
            if s.connections.allSatisfy({ $0 == .ready }) { return .ok }
            if s.connections.contains(where: { $0 == .down || $0 == .closed }) { return .unavailable }
            return .connecting
        }
    }

    /// Outages since start.
    var outages: UInt64 { state.withLock { $0.outages } }

    /// `attest_gateway_store_connections{state}` (gauge: connections per health, every state listed,
    /// only for a Redis store) and `attest_gateway_store_outages_total` (counter).
    func prometheusText() -> String {
        let (connections, outages) = state.withLock { ($0.connections, $0.outages) }
        var out = ""
        if tracked {
            out += "# HELP attest_gateway_store_connections Redis connections (one per event loop) by state.\n"
            out += "# TYPE attest_gateway_store_connections gauge\n"
            for health in RedisConnectionHealth.allCases {
                out += "attest_gateway_store_connections{state=\"\(health.rawValue)\"} \(connections.filter { $0 == health }.count)\n"
            }
        }
        out += "# HELP attest_gateway_store_outages_total Store outages (a connection lost or refused until every connection is back).\n"
        out += "# TYPE attest_gateway_store_outages_total counter\n"
        out += "attest_gateway_store_outages_total \(outages)\n"
        return out
    }
}
