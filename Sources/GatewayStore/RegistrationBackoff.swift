/// The back-off after refused registrations of one device key (DESIGN.md section 8, "Refusals and
/// backoff"): a registration that spent an App Attest attestation and was refused answers
/// `403 registration_refused` with `retryAt`; the wait is one hour, doubling with each refusal in a
/// row, seven days at most. A successful registration of the key clears it.
///
/// Stored under the device key's hash tag (Redis `aa:{<keyId>}:regoff`, fields `n` and `retry`, with
/// a TTL of the delay plus seven days, after which the count starts again).
public struct RegistrationBackoff: Equatable, Sendable {
    /// Refusals in a row, including the one just recorded (>= 1).
    public let refusals: Int
    /// Unix ms before which the client should not spend another attestation.
    public let retryAt: UnixMillis

    /// The first delay, ms (one hour).
    public static let baseDelay: UnixMillis = 3_600_000
    /// The longest delay, ms (seven days); also how long the count is remembered after `retryAt`.
    public static let maximumDelay: UnixMillis = 604_800_000

    /// Creates a value as stored.
    public init(refusals: Int, retryAt: UnixMillis) {
        self.refusals = refusals
        self.retryAt = retryAt
    }

    /// The delay after `refusals` refusals in a row: 1 h, 2 h, 4 h, ... capped at 7 days.
    public static func delay(refusals: Int) -> UnixMillis {
        let doublings = max(refusals, 1) - 1
        guard doublings < 8 else { return maximumDelay }  // 2^8 h > 7 days
        return min(baseDelay << UnixMillis(doublings), maximumDelay)
    }
}
