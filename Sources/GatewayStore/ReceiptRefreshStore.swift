/// The store operations of the receipt refresher (issue 12 "Fraud-metric receipts"): the fleet-wide
/// schedule of refreshes, the per-key lease that makes one replica the refresher of a key, and the
/// atomic replacement of a key's receipt and fraud metric.
///
/// Implemented by `MemoryStore` and `GatewayRedis.RedisStore`; same calling convention as
/// `AttestStore` (returns at once, completion called once, `.failure` = store unavailable).
///
/// Redis layout (all times unix ms): the schedule is the sorted set `<p>:risk:due` (member: keyId
/// base64url, score: when the next exchange is due); the lease is `<p>:{<keyId>}:risklease` (string,
/// value the owner's id, `SET NX PX`), under the key's hash tag like every record of the key.
public protocol ReceiptRefreshStore: AnyObject, Sendable {
    /// Sets (or moves) the key's next refresh to `dueAt`; with `onlyIfAbsent`, only when the key is not
    /// scheduled yet (`ZADD NX`).
    func scheduleRefresh(_ keyId: KeyID, dueAt: UnixMillis, onlyIfAbsent: Bool,
                         completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void)

    /// Removes the key from the schedule (refreshes stopped, or the key is gone).
    func unscheduleRefresh(_ keyId: KeyID, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void)

    /// When the key's refresh is due (ms), nil when it is not scheduled. Read under the lease, it
    /// tells a replica whether another one refreshed the key between its poll and its lease.
    func refreshDueTime(_ keyId: KeyID, completion: @escaping @Sendable (Result<UnixMillis?, StoreUnavailable>) -> Void)

    /// Releases the key's lease when `owner` holds it (after the exchange and the new schedule).
    func releaseRefreshLease(_ keyId: KeyID, owner: String, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void)

    /// Up to `limit` keys whose refresh is due at `now` (earliest first).
    func dueRefreshes(now: UnixMillis, limit: Int, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void)

    /// Takes the key's refresh lease for `owner` during `ttl` ms when no one holds it (or `owner`
    /// itself holds it: the lease is then extended). `.success(false)`: another owner holds it.
    func acquireRefreshLease(_ keyId: KeyID, owner: String, ttl: UnixMillis,
                             completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void)

    /// Replaces the key's receipt, fraud metric, metric time (`observedAt`, the receipt's creation
    /// time), receipt expiry, and sets the state `fresh`, in one atomic step. `.success(false)` when the
    /// key record does not exist (nothing is created).
    func storeRefreshedReceipt(_ keyId: KeyID, receipt: [UInt8], riskMetric: UInt32?, observedAt: UnixMillis,
                               receiptExpiresAt: UnixMillis?, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void)

    /// Sets the key's metric state (`stale` after a 404, `stopped` after a 400/401); receipt and metric
    /// stay. `.success(false)` when the key record does not exist.
    func markRisk(_ keyId: KeyID, state: RiskMetricState, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void)
}

extension ReceiptRefreshStore {
    /// Sets (or moves) the key's next refresh to `dueAt`.
    public func scheduleRefresh(_ keyId: KeyID, dueAt: UnixMillis, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        scheduleRefresh(keyId, dueAt: dueAt, onlyIfAbsent: false, completion: completion)
    }
}
