import GatewayConfig

/// How long a key registration of one app stays valid (`apps[].registration_ttl`; issue 10,
/// DESIGN.md section 8 "Lifecycle"), and when the client should renew it.
///
/// - `expiresAt` = registration (or renewal) time + TTL; nil when the app has no TTL (never expires).
/// - `renewAfter` = the moment two thirds of the TTL have passed, i.e. `expiresAt - TTL/3`: a client
///   renews from then on (`POST {prefix}/renew`), leaving the last third as slack for clients that run
///   rarely; a renewal at any time before `expiresAt` is accepted. After `expiresAt` the key answers
///   `401 key_expired` / `reattest` and cannot renew.
/// All values are unix milliseconds here; the JSON answers give unix seconds (`jsonSeconds`).
/// Used by `POST {prefix}/attest`, `POST {prefix}/renew` and the device-key registration.
public struct RegistrationLifetime: Sendable, Equatable {
    /// The TTL in milliseconds; nil = registrations never expire.
    public let ttlMillis: Int64?

    /// A lifetime of `ttlMillis` (nil: forever; values below 1 ms are treated as 1 ms).
    public init(ttlMillis: Int64?) {
        self.ttlMillis = ttlMillis.map { max($0, 1) }
    }

    /// The lifetime configured for `app` (`registration_ttl`).
    public init(_ app: AppConfiguration) {
        self.init(ttlMillis: app.registrationTTL.map(GatewayRuntime.millis))
    }

    /// Registrations that never expire.
    public static let forever = RegistrationLifetime(ttlMillis: nil)

    /// The expiry of a registration or renewal made at `now` (unix ms), or nil (never).
    public func expiresAt(now: Int64) -> Int64? {
        ttlMillis.map { now.addingReportingOverflow($0).overflow ? .max : now + $0 }
    }

    /// When the client should renew a registration that expires at `expiresAt` (unix ms): once two
    /// thirds of the TTL have passed. nil when there is no expiry.
    public func renewAfter(expiresAt: Int64?) -> Int64? {
        guard let expiresAt, let ttl = ttlMillis else { return nil }
        return expiresAt - ttl / 3
    }

    /// Unix milliseconds as the unix seconds of the JSON answers (rounded down).
    public static func jsonSeconds(_ millis: Int64) -> Int64 {
        millis >= 0 ? millis / 1000 : (millis - 999) / 1000
    }
}
