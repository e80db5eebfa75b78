/// Delay before the next reconnect attempt: exponential from `base`, capped at `cap`, with "equal
/// jitter" (half fixed, half random) so a fleet of gateways does not reconnect in lockstep after a Redis
/// restart. Pure: the random unit is an input.
struct ReconnectBackoff: Sendable, Equatable {
    /// First delay, nanoseconds.
    let base: UInt64
    /// Largest delay, nanoseconds.
    let cap: UInt64

    /// Delay for the `attempt`-th consecutive failure (1-based), given `unit` in 0..<1.
    /// - Returns: nanoseconds in `[d/2, d]` where `d = min(cap, base * 2^(attempt-1))`.
    func delay(attempt: Int, unit: Double) -> UInt64 {
        let exponent = min(max(attempt - 1, 0), 40)
        let (scaled, overflow) = base.multipliedReportingOverflow(by: UInt64(1) << UInt64(exponent))
        let full = overflow ? cap : min(scaled, cap)
        let half = full / 2
        let jitter = UInt64(Double(full - half) * min(max(unit, 0), 0.999_999))
        return half + jitter
    }
}
