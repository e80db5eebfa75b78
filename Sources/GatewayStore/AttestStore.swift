/// Milliseconds since the Unix epoch: the unit of every time the store takes or returns.
public typealias UnixMillis = Int64

/// The gateway's state (DESIGN.md section 4): challenges and attested key records.
///
/// Implementations: `MemoryStore` (embedded default) and `GatewayRedis.RedisStore`; both pass the shared
/// conformance suite (Tests/GatewayTestSupport/StoreConformance.swift), so they have the same semantics.
///
/// Calling convention (the gateway calls from its Dispatch event loop):
/// - Every method returns at once and never blocks a thread on I/O.
/// - `completion` is called exactly once, on an unspecified thread: `MemoryStore` calls it synchronously
///   on the calling thread before the method returns; `RedisStore` calls it on the serial queue of the
///   connection that carried the command (also when it fails fast). It must not block and must not
///   assume a particular queue; hop to your own queue if you need one.
/// - `.failure(StoreUnavailable)` is an infrastructure failure (503, fail-closed); `.success(.refused)`
///   is a verdict. Neither changes anything in the store.
/// - Time decisions (challenge and registration expiry) use the caller's `now` (injected time), never
///   the store's clock; only the purge of long-expired challenges uses the store's clock.
public protocol AttestStore: AnyObject, Sendable {
    /// Stores `challenge` under `keyId` for `purpose`, valid while `now < expiresAt`.
    ///
    /// The record is kept `challengeGrace` (store configuration) beyond `expiresAt` so that a late use
    /// answers `challenge_expired` rather than `challenge_unknown`, then purged. Issuing the same value
    /// again under the same keyId replaces its purpose and expiry.
    /// - Parameters:
    ///   - expiresAt: unix ms; the lifetime `expiresAt - now` is clamped to 0...86_400_000 (one day).
    ///   - now: the caller's current time, unix ms.
    func issueChallenge(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis,
                        now: UnixMillis, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void)

    /// Registers an attested key and consumes its attestation challenge, atomically (Apple attestation
    /// flow, after the nine verification steps; DESIGN.md section 1 "attestation").
    ///
    /// Checks in order, refusing on the first failure with nothing changed: challenge exists under
    /// `record.keyId` (`challenge_unknown`), `now < expiresAt` (`challenge_expired`), purpose `attest`
    /// (`challenge_wrong_purpose`), no record for the keyId yet (`key_exists`: re-attesting an existing
    /// key never resets its counter; the challenge stays pending). Then writes `record` and deletes the
    /// challenge.
    func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                     completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void)

    /// Reads the key record for `keyId`; `.success(nil)` when there is none.
    func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void)

    /// The per-request commit (DESIGN.md section 4), atomically, after the gateway verified the
    /// assertion's signature.
    ///
    /// Checks in order, refusing on the first failure with nothing changed: key exists (`key_unknown`),
    /// status active (`key_revoked`), registration not expired (`key_expired`), challenge exists under
    /// `keyId` (`challenge_unknown`; a wrong challenge value never burns the pending one), `now <
    /// expiresAt` (`challenge_expired`), purpose `assert` (`challenge_wrong_purpose`), `counter` admitted by
    /// `ReplayWindow.admit` with route window `window` (`counter_replay`). Then consumes the challenge and
    /// stores the new highest counter and window.
    /// - Parameters:
    ///   - counter: the assertion's authenticatorData counter.
    ///   - window: the route's anti-replay window W, clamped to 0...`ReplayWindow.capacity`; 0 = strictly
    ///     increasing.
    /// - Returns (via completion): the stored key fields on acceptance.
    func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                         completion: @escaping @Sendable (Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>) -> Void)

    /// `commitAssertion` that also stores `next`, the challenge of the client's next protected
    /// request (DESIGN.md section 9, "Next challenge"), in the same atomic step and store round trip.
    ///
    /// The commit's checks, order and effects are exactly those of `commitAssertion` (on a refusal
    /// the key record and the presented challenge are unchanged). Independently of the outcome,
    /// `next` is stored under `keyId` with purpose `assert` and expiry `next.expiresAt` whenever the
    /// key exists, is active and unexpired: after an acceptance and after the refusals
    /// `challenge_unknown`, `challenge_expired`, `challenge_wrong_purpose` and `counter_replay`
    /// (`AssertionCommit.issuesNext(after:)`); never for `key_unknown`, `key_revoked`, `key_expired`.
    /// `AssertionCommit.nextIssued` says whether it was stored.
    ///
    /// The default implementation (for stores without a combined command) runs `commitAssertion` and
    /// then `issueChallenge`: two round trips, the same answers; an `issueChallenge` failure after a
    /// commit is reported as `nextIssued == false`, never as a failed commit.
    func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                         issuing next: NextChallenge,
                         completion: @escaping @Sendable (Result<AssertionCommit, StoreUnavailable>) -> Void)

    /// Counts one use of the fleet-wide limit `name` (issue 12, `endpoints.fleet_attest_rate`): at
    /// most `limit` uses per fixed window of `windowMillis`, windows aligned to multiples of
    /// `windowMillis` since the Unix epoch on the caller's `now`, shared by every process using the
    /// same store (one counter per window, expiring after two windows). A use over the limit is
    /// `.refused` with the time left in the window; it is counted too (it changes nothing that
    /// matters: the window stays used up).
    /// - Parameters:
    ///   - name: 1...64 bytes of `[A-Za-z0-9_-]`.
    ///   - limit: >= 1. `windowMillis`: >= 1.
    /// Stores without the command answer `.failure` (fail closed) through the default implementation.
    func acquireFleetSlot(_ name: String, limit: Int, windowMillis: UnixMillis, now: UnixMillis,
                          completion: @escaping @Sendable (Result<FleetSlot, StoreUnavailable>) -> Void)

    /// Marks the key revoked (operator action). `.success(false)` when there is no such key.
    func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void)

    /// Deletes the key record (admin and tests); pending challenges of the key expire by themselves.
    /// `.success(false)` when there was no such key.
    func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void)

    /// Readiness probe: succeeds when the store can serve commands now.
    func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void)

    /// Registers a device key and consumes its `register` challenge, atomically (`POST {prefix}/register`,
    /// DESIGN.md section 8), after the gateway verified the registration.
    ///
    /// Checks in order, refusing on the first failure with nothing changed: challenge exists under
    /// `record.keyId` (`challenge_unknown`), `now < expiresAt` (`challenge_expired`), purpose `register`
    /// (`challenge_wrong_purpose`), no live record for the keyId (`key_exists`; an active record whose
    /// registration expired is replaced, so a device that let its registration lapse registers its key
    /// again: a revoked record, or one without an expiry, is never replaced). Then writes `record`,
    /// deletes the challenge and clears the key's `RegistrationBackoff`.
    /// Default implementation (stores without device keys): `.failure(StoreUnavailable(.closed))`.
    func registerDeviceKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                           completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void)

    /// Stores the App Attest key that vouched for a device-key registration with an attestation
    /// (`POST {prefix}/register`'s attestation form, DESIGN.md section 8), so that it can vouch again
    /// later with an assertion, exactly as `registerKey` stores a key attested through `/attest` but
    /// without a challenge: the registration that verified the attestation already consumed its
    /// `register` challenge (`registerDeviceKey`), which is the replay guard. Call it only after that
    /// registration was accepted.
    ///
    /// Writes `record` when there is no record for `record.keyId`; any existing record (live, expired,
    /// revoked, App Attest or device key) is kept as it is (`key_exists`: a held key's counter never
    /// goes back). Atomic (one Lua script under the key's hash tag; one critical section in memory).
    /// Default implementation (stores without device keys): `.failure(StoreUnavailable(.closed))`.
    func registerVouchingKey(_ record: KeyRecord,
                             completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void)

    /// The per-request commit of a request signed by a device key (`App-Attest-Signature`, DESIGN.md
    /// section 8), atomically, after the gateway verified the signature: the one-time challenge is the
    /// replay guard (there is no counter).
    ///
    /// Checks in order, refusing on the first failure with nothing changed: key exists (`key_unknown`),
    /// status active (`key_revoked`), registration not expired (`key_expired`), challenge exists under
    /// `keyId` (`challenge_unknown`), `now < expiresAt` (`challenge_expired`), purpose `assert`
    /// (`challenge_wrong_purpose`). Then consumes the challenge.
    func commitSignedRequest(keyId: KeyID, challenge: Challenge, now: UnixMillis,
                             completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void)

    /// Records one more refused registration of the device key `keyId` (one that spent an App Attest
    /// attestation) and returns the back-off now in force: `refusals` in a row and `retryAt` = `now` +
    /// `RegistrationBackoff.delay(refusals:)`. Atomic (read, increment, write).
    func recordRegistrationRefusal(keyId: KeyID, now: UnixMillis,
                                   completion: @escaping @Sendable (Result<RegistrationBackoff, StoreUnavailable>) -> Void)

    /// Releases the store for good (gateway shutdown, the end of a tool's run). Returns at once.
    ///
    /// Commands still pending complete with `.failure(StoreUnavailable(.closed))`, and so does every
    /// call made after `close()` returns, through its normal completion path (never a verdict, never
    /// a crash). Calling it again does nothing. What it releases: `MemoryStore` drops its challenges
    /// and key records (the state is lost, as when the process exits) and stops its sweep timer;
    /// `RedisStore` closes its connections (sockets and timers) and stops reconnecting. Stored Redis
    /// data is untouched.
    func close()
}

extension AttestStore {
    /// No fleet counters in this store: `.failure` (a configured fleet limit fails closed).
    public func acquireFleetSlot(_ name: String, limit: Int, windowMillis: UnixMillis, now: UnixMillis,
                                 completion: @escaping @Sendable (Result<FleetSlot, StoreUnavailable>) -> Void) {
        completion(.failure(StoreUnavailable(.protocolError, detail: "this store keeps no fleet counters")))
    }

    /// The window a fleet counter is in (`now / windowMillis`) and the milliseconds left in it.
    public static func fleetWindow(now: UnixMillis, windowMillis: UnixMillis) -> (index: Int64, remaining: UnixMillis) {
        let window = max(windowMillis, 1)
        let index = now >= 0 ? now / window : (now - window + 1) / window
        return (index, max((index + 1) * window - now, 1))
    }
}

extension AttestStore {
    /// Two round trips: `commitAssertion`, then `issueChallenge` when the outcome keeps the key in
    /// use (see the requirement's documentation).
    public func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                                issuing next: NextChallenge,
                                completion: @escaping @Sendable (Result<AssertionCommit, StoreUnavailable>) -> Void) {
        commitAssertion(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now) { [self] result in
            switch result {
            case .failure(let error):
                completion(.failure(error))
            case .success(let outcome):
                guard AssertionCommit.issuesNext(after: outcome) else {
                    completion(.success(AssertionCommit(outcome: outcome, nextIssued: false)))
                    return
                }
                issueChallenge(next.challenge, keyId: keyId, purpose: .assert, expiresAt: next.expiresAt, now: now) { issued in
                    let stored = if case .success = issued { true } else { false }
                    completion(.success(AssertionCommit(outcome: outcome, nextIssued: stored)))
                }
            }
        }
    }
}

/// Limits shared by the store implementations.
public enum StoreLimits {
    /// Longest challenge lifetime accepted by `issueChallenge` (one day, in ms); longer ones are clamped.
    public static let maximumChallengeLifetime: UnixMillis = 86_400_000

    /// `expiresAt - now` clamped to 0...maximumChallengeLifetime without overflow.
    public static func challengeLifetime(expiresAt: UnixMillis, now: UnixMillis) -> UnixMillis {
        let (difference, overflow) = expiresAt.subtractingReportingOverflow(now)
        if overflow { return expiresAt > now ? maximumChallengeLifetime : 0 }
        return min(max(difference, 0), maximumChallengeLifetime)
    }
}
