import GatewayRules
import GatewayStore

/// The routing decisions for one command sent to a Redis Cluster, as a value type: it is told how each
/// try ended and answers what to do next. No sockets, no clock (`now` is passed in, monotonic
/// nanoseconds), so every rule is unit-tested without I/O.
///
/// Rules (Redis Cluster specification, "Redirection and resharding", "Failover"):
/// - a reply that is not a cluster error is delivered (error replies included: the store decides);
/// - `MOVED`: follow at once to the named node, patch the map and refresh it;
/// - `ASK`: send once to the named node with `ASKING`, the map unchanged;
/// - at most `maximumRedirects` MOVED/ASK in a row per command (a loop means a broken map): then
///   fail; a `TRYAGAIN` ends the row (its retry waits, so the deadline bounds ASK-TRYAGAIN cycles);
/// - `TRYAGAIN`, `CLUSTERDOWN`, no primary known for the slot, and a node that is not connected
///   (fail-fast: nothing was sent) are retried after a short delay (10 ms doubling to 100 ms) while
///   the retry still starts before the command's deadline (its start plus the command timeout);
///   `CLUSTERDOWN`, a missing primary and a down node also ask for a map refresh;
/// - a command whose outcome is unknown (connection lost, timeout, protocol error) is never resent:
///   it fails (the gateway answers 503), and the map is refreshed;
/// - `overloaded` and `closed` fail at once.
struct RedisClusterAttempt: Sendable {
    /// What the router does next.
    enum Decision: Equatable, Sendable {
        /// Hand the reply to the caller.
        case deliver
        /// Record that `slot` lives on `endpoint`, refresh the map, resend there now.
        case moved(slot: Int, to: RedisURL.Endpoint)
        /// Send `ASKING` then the command to `endpoint` now.
        case ask(RedisURL.Endpoint)
        /// Resend to the slot's primary after `delay` nanoseconds (refreshing the map first if asked).
        case retry(delay: UInt64, refresh: Bool)
        /// Give up with this error (refreshing the map if asked).
        case fail(StoreUnavailable, refresh: Bool)
    }

    /// MOVED/ASK redirects followed per command at most.
    static let maximumRedirects = 5
    /// First retry delay, nanoseconds.
    static let firstDelay: UInt64 = 10_000_000
    /// Largest retry delay, nanoseconds.
    static let maximumDelay: UInt64 = 100_000_000

    /// The command's slot.
    let slot: Int
    /// Monotonic nanoseconds after which no new try starts.
    let deadline: UInt64
    private(set) var redirects = 0
    private(set) var retries = 0

    init(slot: Int, now: UInt64, timeout: UInt64) {
        self.slot = slot
        deadline = now &+ timeout
    }

    /// How a try ended: its result (`fallbackHost`: host of the node that answered, for redirects
    /// naming none).
    mutating func decide(_ result: Result<RedisReply, StoreUnavailable>, now: UInt64, fallbackHost: String) -> Decision {
        switch result {
        case .success(let reply):
            guard let redirect = RedisClusterRedirect(reply, fallbackHost: fallbackHost) else { return .deliver }
            switch redirect {
            case .moved(let slot, let endpoint):
                redirects += 1
                guard redirects <= RedisClusterAttempt.maximumRedirects else {
                    return .fail(StoreUnavailable(.errorReply("MOVED"), detail: "too many cluster redirects for slot \(self.slot)"), refresh: true)
                }
                return .moved(slot: slot, to: endpoint)
            case .ask(_, let endpoint):
                redirects += 1
                guard redirects <= RedisClusterAttempt.maximumRedirects else {
                    return .fail(StoreUnavailable(.errorReply("ASK"), detail: "too many cluster redirects for slot \(slot)"), refresh: true)
                }
                return .ask(endpoint)
            case .tryAgain:
                // TRYAGAIN ends a redirect chain: the retry after its delay starts a new one. An
                // importing node answers it to a multi-key script while the slot's keys are split
                // between two nodes, after the source's ASK; counting those ASKs used up the redirect
                // budget in about 250 ms, long before the command timeout (probe).
                redirects = 0
                return retry(now: now, refresh: false, failure: RedisStore.errorReply(reply))
            case .clusterDown:
                return retry(now: now, refresh: true, failure: RedisStore.errorReply(reply))
            }
        case .failure(let error):
            switch error.reason {
            case .notConnected:
                return retry(now: now, refresh: true, failure: error)
            case .connectionLost, .timeout, .protocolError:
                return .fail(error, refresh: true)
            case .overloaded, .closed, .errorReply:
                return .fail(error, refresh: false)
            }
        }
    }

    /// No primary is known for the slot (empty or partial map).
    mutating func unrouted(now: UInt64) -> Decision {
        retry(now: now, refresh: true,
              failure: StoreUnavailable(.notConnected, detail: "no Redis Cluster primary known for slot \(slot)"))
    }

    private mutating func retry(now: UInt64, refresh: Bool, failure: StoreUnavailable) -> Decision {
        let delay = min(RedisClusterAttempt.firstDelay << UInt64(min(retries, 8)), RedisClusterAttempt.maximumDelay)
        guard now &+ delay < deadline else { return .fail(failure, refresh: refresh) }
        retries += 1
        return .retry(delay: delay, refresh: refresh)
    }
}
