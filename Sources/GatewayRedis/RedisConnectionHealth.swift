/// Whether one event loop's Redis connection can run commands, as the gateway's readiness and
/// outage log see it (a coarse view of `RedisConnectionMachine.State`).
///
/// - `connecting`: the first connection (or the first after `ready`) is being made; no failure yet.
/// - `ready`: connected and handshaken (AUTH, SELECT, SCRIPT LOAD): commands go through.
/// - `down`: a connection attempt failed or the connection was lost; it stays `down` through the
///   following reconnect attempts until one succeeds (commands fail fast meanwhile).
/// - `closed`: the store was closed.
public enum RedisConnectionHealth: String, Sendable, CaseIterable {
    case connecting
    case ready
    case down
    case closed

    /// The health of a connection in `state`, given the health reported before.
    init<Token>(_ state: RedisConnectionMachine<Token>.State, previous: RedisConnectionHealth) {
        switch state {
        case .ready: self = .ready
        case .closed: self = .closed
        case .backoff: self = .down
        case .connecting, .handshaking: self = previous == .down ? .down : .connecting
        }
    }
}
