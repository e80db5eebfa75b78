import Foundation

/// The wait after registration attempts that spent an App Attest attestation without a lasting
/// registration (DESIGN.md section 8; refused, failed, or re-attested at once): one hour after the
/// first, doubling with each in a row, at most seven days; the gateway's `retryAt` when it asks for
/// longer. Persisted so that relaunching does not spend more; `until` 0 keeps the count while inactive.
struct RegistrationBackoff: Codable, Sendable, Equatable {
    /// Refusals in a row.
    var refusals: Int
    /// No new attempt before this time (unix seconds).
    var until: Double

    static let first: Double = 3600
    static let cap: Double = 7 * 86400

    /// The wait after refusal number `refusals` (1-based), in seconds.
    static func wait(refusals: Int) -> Double {
        min(cap, first * pow(2, Double(max(0, min(refusals - 1, 20)))))
    }

    /// The state after one more refusal at `now`: the gateway's `retryAt` is honoured when later, but
    /// never past `cap` (seven days) from `now` (a `retryAt` of 1e300 would block registration for good).
    func refused(now: Double, retryAt: Double?) -> RegistrationBackoff {
        let count = refusals + 1
        let asked = (retryAt?.isFinite ?? false) ? retryAt! : 0
        return RegistrationBackoff(refusals: count, until: max(now + Self.wait(refusals: count), min(asked, now + Self.cap)))
    }

    /// This state read at `now`, with `until` at most `cap` ahead (a record written otherwise, e.g. a
    /// corrupted file, never blocks for longer than seven days).
    func bounded(now: Double) -> RegistrationBackoff {
        until.isFinite && until <= now + Self.cap ? self : RegistrationBackoff(refusals: refusals, until: now + Self.cap)
    }

    /// `until` as ISO 8601 UTC, e.g. `2026-12-01T21:00:00Z`.
    var untilText: String {
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: until.rounded(.up)))
    }
}
