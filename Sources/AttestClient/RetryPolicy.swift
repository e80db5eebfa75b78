import Foundation

/// The back-off of `retry` answers and lost connections: exponential from `base` (doubling per retry,
/// capped at `cap`), never shorter than the answer's `Retry-After`, then stretched by a random 0-20 %
/// so that many clients told to retry at once do not come back at once. A `Retry-After` longer than
/// `cap` is never waited (`waits(for:)`): the call ends at once, unavailable.
struct RetryPolicy: Sendable {
    var base: Double
    var cap: Double
    var maxRetries: Int

    /// The delay before retry number `attempt` (0 for the first retry), in seconds.
    /// - Parameters:
    ///   - retryAfter: the answer's `Retry-After` in seconds, when it had one.
    ///   - jitter: a number in [0, 1) (random in production).
    func delay(attempt: Int, retryAfter: Double?, jitter: Double) -> Double {
        let exponential = min(cap, base * pow(2, Double(min(attempt, 30))))
        return max(retryAfter ?? 0, exponential) * (1 + 0.2 * min(max(jitter, 0), 1))
    }

    /// Whether the SDK waits for `retryAfter` (seconds) before retrying: only up to `cap`. A longer
    /// wait (a gateway asking for hours or years) ends the call as unavailable instead of blocking it.
    func waits(for retryAfter: Double?) -> Bool {
        (retryAfter ?? 0) <= cap
    }

    /// `Retry-After` as delta-seconds (an HTTP date is read as "no hint").
    static func retryAfter(_ value: String?) -> Double? {
        guard let value, let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds >= 0, seconds.isFinite else { return nil }
        return seconds
    }
}
