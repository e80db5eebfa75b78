/// The life of a registration (issue 10, DESIGN.md section 8 "Lifecycle" and "Keys per account"):
/// renewal and forgetting by the key itself, and the per-account index of keys. Implemented by
/// `MemoryStore` and `GatewayRedis.RedisStore` with the same semantics (conformance suite
/// `StoreConformance+Lifecycle`); the calling convention is that of `AttestStore`.
///
/// Renew and forget are one atomic step each (one Lua script in Redis, one critical section in memory)
/// under the key's hash tag: on any refusal nothing changes and the challenge stays pending.
///
/// The account index lives under a hash tag of its own (`<p>:{acct:<hash>}:...`), so that in Redis
/// Cluster each script still touches one slot: registering a key (key slot), then indexing it and
/// choosing the keys to revoke (account slot), then revoking those (each in its key's slot) are three
/// atomic steps, in that order. A crash between them can leave one key too many for the account, never
/// a lost registration nor a live key revoked without need (README "Keys per account").
public protocol KeyLifecycleStore: AttestStore {
    /// Extends (or ends) the registration of `keyId`, spending a `renew` challenge, atomically.
    ///
    /// Checks in order, refusing on the first failure with nothing changed: key exists (`key_unknown`:
    /// also a forgotten key), status active (`key_revoked`), registration not expired at `now`
    /// (`key_expired`: an expired key attests anew), challenge exists under `keyId`
    /// (`challenge_unknown`), `now < challenge expiry` (`challenge_expired`), purpose `renew`
    /// (`challenge_wrong_purpose`), and when `counter` is given (App Attest assertion) counter strictly
    /// above the stored one (`counter_replay`). Then stores `expiresAt` (nil removes the expiry), the new
    /// counter (the anti-replay window slides as for an assertion), and deletes the challenge.
    /// - Returns (via completion): the record's account hash, if any.
    func renewKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, expiresAt: UnixMillis?, now: UnixMillis,
                  completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void)

    /// Deletes the record of `keyId`, spending a `forget` challenge, atomically.
    ///
    /// Same checks as `renewKey` with purpose `forget`, except that an expired registration may be
    /// forgotten (the key still proves possession; it only cleans up). A revoked key cannot forget
    /// itself (`key_revoked`): its revocation stays on record. Then deletes the key record and the
    /// challenge.
    /// - Returns (via completion): the deleted record's account hash, if any.
    func forgetKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, now: UnixMillis,
                   completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void)

    /// Adds `keyId` to the index of `account` (ordered by `createdAt`, then keyId) with its registration
    /// expiry, atomically dropping the entries whose expiry passed (`expiresAt <= now`), then removing
    /// the oldest entries while more than `limit` remain.
    /// - Returns (via completion): the keyIds removed to respect the limit, oldest first (the caller
    ///   revokes them). The new key is the newest unless clocks disagree; only then can it be the one
    ///   taken out (ties on createdAt go by the raw keyId bytes).
    func indexAccountKey(_ account: AccountHash, keyId: KeyID, createdAt: UnixMillis, expiresAt: UnixMillis?,
                         limit: Int, now: UnixMillis,
                         completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void)

    /// Updates the expiry kept in the index of `account` for `keyId` (after a renewal); nothing when the
    /// key is not in the index.
    func updateAccountKeyExpiry(_ account: AccountHash, keyId: KeyID, expiresAt: UnixMillis?,
                                completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void)

    /// Removes `keyId` from the index of `account` (after forget or revocation). `.success(false)` when
    /// it was not there.
    func removeAccountKey(_ account: AccountHash, keyId: KeyID,
                          completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void)

    /// The keyIds in the index of `account`, oldest first (expired entries included until the next
    /// `indexAccountKey` drops them).
    func accountKeys(_ account: AccountHash, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void)
}

/// What `renewKey` and `forgetKey` report on success.
public struct KeyLifecycleChange: Equatable, Sendable {
    /// The key record's account hash, if it has one (the caller then updates the account index).
    public let accountHash: AccountHash?

    /// Memberwise initialiser (used by store implementations).
    public init(accountHash: AccountHash?) {
        self.accountHash = accountHash
    }
}
