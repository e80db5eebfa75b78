import Foundation

/// Time as the SDK sees it: now (for expiry, renewal and back-off) and waiting (for `Retry-After` and
/// Apple's `serverUnavailable`). Tests inject a clock that moves only when told.
public protocol AttestClock: Sendable {
    /// Unix time in seconds.
    func now() -> Double
    /// Blocks the calling thread for `seconds`.
    func sleep(seconds: Double)
}
