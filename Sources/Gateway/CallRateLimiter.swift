/// A token bucket bounding the calls a process makes to Apple's data server (issue 12: "a bounded
/// rate of calls to Apple per process"): `rate` tokens per second, at most `burst` kept. Value type
/// with injected time (ms); the refresher keeps it on its queue.
struct CallRateLimiter: Sendable, Equatable {
    let rate: Double
    let burst: Double
    private var tokens: Double
    private var last: Int64?

    /// A full bucket. `rate` > 0 per second; `burst` defaults to max(1, rate).
    init(rate: Double, burst: Double? = nil) {
        self.rate = max(rate, 0.001)
        self.burst = max(1, burst ?? rate)
        tokens = self.burst
    }

    /// Takes one token at `now` (ms) when there is one.
    mutating func take(now: Int64) -> Bool {
        if let last, now > last { tokens = min(burst, tokens + Double(now - last) / 1000 * rate) }
        if last == nil || now > last! { last = now }
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }
}
