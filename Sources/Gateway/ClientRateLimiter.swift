import Synchronization

/// Token buckets per client address for the gateway's endpoints (`endpoints.rate_limit`): each
/// client may make `burst` requests at once, refilled at `rate` per second; beyond that the gateway
/// answers `429 rate_limited` with `Retry-After` (DESIGN.md section 2).
///
/// Thread-safe (one `Mutex`). Memory is bounded: when the table reaches `maximumClients`, buckets idle
/// long enough to be full again are dropped, and when that frees too little (more clients than the
/// table holds, each still short of a full bucket: a flood of distinct addresses), the least recently
/// seen buckets are dropped down to half the bound, so a sweep runs once per `maximumClients / 2` new
/// clients, never on every request (a probe's 110,000 clients made each request sweep the whole
/// table under the lock). A dropped client starts again from a full bucket, as a new one would.
final class ClientRateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Int64
    }

    /// Refill per millisecond.
    private let ratePerMillisecond: Double
    private let burst: Double
    private let clock: GatewayClock
    private let buckets = Mutex<[String: Bucket]>([:])
    /// Table size at which idle buckets are swept.
    let maximumClients: Int

    /// A limiter of `requestsPerSecond` with `burst`.
    init(requestsPerSecond: Int, burst: Int, clock: GatewayClock, maximumClients: Int = 100_000) {
        ratePerMillisecond = Double(max(1, requestsPerSecond)) / 1000
        self.burst = Double(max(1, burst))
        self.clock = clock
        self.maximumClients = maximumClients
    }

    /// Takes one token for `client`.
    /// - Returns: nil when allowed, else the seconds until a token is available (at least 1).
    func acquire(_ client: String) -> Int? {
        let now = clock.now()
        return buckets.withLock { table -> Int? in
            var bucket = table[client] ?? Bucket(tokens: burst, updated: now)
            let elapsed = Double(max(0, now - bucket.updated))
            bucket.tokens = min(burst, bucket.tokens + elapsed * ratePerMillisecond)
            bucket.updated = now
            defer {
                if table.count >= maximumClients { sweep(&table, now: now) }
                table[client] = bucket
            }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            let wait = (1 - bucket.tokens) / ratePerMillisecond / 1000
            return max(1, Int(wait.rounded(.up)))
        }
    }

    /// Drops buckets that would be full by now (their clients are indistinguishable from new ones);
    /// then, when the table is still above half of `maximumClients`, the least recently seen ones down to it.
    private func sweep(_ table: inout [String: Bucket], now: Int64) {
        let fullAfter = burst / ratePerMillisecond
        table = table.filter { Double(now - $0.value.updated) < fullAfter }
        let keep = maximumClients / 2
        guard table.count > keep else { return }
        let newest = table.sorted { $0.value.updated > $1.value.updated }.prefix(keep)
        table = Dictionary(uniqueKeysWithValues: newest.map { ($0.key, $0.value) })
    }

    /// Clients with a bucket now (tests).
    var clientCount: Int { buckets.withLock { $0.count } }
}
