import Foundation
import GatewayRules
import GatewayStore

/// The key lifecycle part of the conformance suite (issue 10: renew, forget, the account index), run
/// against `MemoryStore` and `RedisStore` alike. Every refusal check is beside its passing case, and
/// after each refusal the record is unchanged and the challenge still pending.
extension StoreConformance {
    /// Every lifecycle check, by name (the test classes assert they cover them all).
    public static let lifecycleChecks: [(name: String, run: @Sendable (StoreConformance) throws -> Void)] = [
        ("renewExtendsExpiryAndSpendsChallenge", { try $0.renewExtendsExpiryAndSpendsChallenge() }),
        ("renewRefusalsChangeNothing", { try $0.renewRefusalsChangeNothing() }),
        ("renewCounterAdvancesLikeAnAssertion", { try $0.renewCounterAdvancesLikeAnAssertion() }),
        ("forgetDeletesAndForgottenKeyCannotRenew", { try $0.forgetDeletesAndForgottenKeyCannotRenew() }),
        ("forgetRefusalsChangeNothing", { try $0.forgetRefusalsChangeNothing() }),
        ("raceSameRenewalAcceptedOnce", { try $0.raceSameRenewalAcceptedOnce() }),
        ("accountHashRoundTripAndReported", { try $0.accountHashRoundTripAndReported() }),
        ("accountIndexRevokesOldestBeyondLimit", { try $0.accountIndexRevokesOldestBeyondLimit() }),
        ("accountIndexDropsExpiredAndRemoved", { try $0.accountIndexDropsExpiredAndRemoved() }),
        ("raceAccountIndexKeepsTheLimit", { try $0.raceAccountIndexKeepsTheLimit() }),
    ]

    /// The store under test as a `KeyLifecycleStore`.
    public var lifecycleStore: any KeyLifecycleStore {
        get throws {
            guard let lifecycle = store as? any KeyLifecycleStore else {
                throw ConformanceFailure(message: "\(type(of: store)) is not a KeyLifecycleStore", file: #filePath, line: #line)
            }
            return lifecycle
        }
    }

    // MARK: - Checks

    /// A renewal sets the new expiry (or removes it), spends the challenge once, leaves the counter
    /// alone when no counter is given (device key).
    public func renewExtendsExpiryAndSpendsChallenge() throws {
        let record = try makeRecord(expiresAt: baseNow + 60_000)
        try registerExpectingAccepted(record)
        let challenge = try issue(.renew, record.keyId)
        try expectRenew(record.keyId, challenge, expiresAt: baseNow + 600_000, now: baseNow + 1_000, accepted: true)
        let renewed = try fetch(record.keyId)
        try expect(renewed?.expiresAt == baseNow + 600_000 && renewed?.counter == 0 && renewed?.status == .active,
                   "renewed record: new expiry, counter and status kept, got \(String(describing: renewed))")
        // Replayed renewal: the challenge was spent.
        try expectRenew(record.keyId, challenge, expiresAt: baseNow + 900_000, now: baseNow + 2_000, refused: .challengeUnknown)
        try expect(try fetch(record.keyId)?.expiresAt == baseNow + 600_000, "unchanged after the replayed renewal")
        // Past the old expiry (baseNow + 60 s) the key still works: the renewal moved it.
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 1, now: baseNow + 120_000, accepted: true)
        // A renewal without expiry (the app has no registration_ttl any more) removes it.
        try expectRenew(record.keyId, try issue(.renew, record.keyId), expiresAt: nil, now: baseNow + 3_000, accepted: true)
        try expect(try fetch(record.keyId)?.expiresAt == nil, "renewal with no TTL removes the expiry")
    }

    /// Unknown key, revoked key, expired key, a challenge of another key, of another purpose, expired
    /// or never issued: each refused with its code, nothing changed, the good challenge still pending.
    public func renewRefusalsChangeNothing() throws {
        let record = try makeRecord(expiresAt: baseNow + 60_000)
        try registerExpectingAccepted(record)
        let good = try issue(.renew, record.keyId)
        let newExpiry = baseNow + 600_000

        try expectRenew(try randomKeyId(), good, expiresAt: newExpiry, now: baseNow, refused: .keyUnknown)
        try expectRenew(record.keyId, try randomChallenge(), expiresAt: newExpiry, now: baseNow, refused: .challengeUnknown)
        let other = try makeRecord()
        try registerExpectingAccepted(other)
        let foreign = try issue(.renew, other.keyId)
        try expectRenew(record.keyId, foreign, expiresAt: newExpiry, now: baseNow, refused: .challengeUnknown)
        for purpose in [ChallengePurpose.assert, .forget, .attest] {
            try expectRenew(record.keyId, try issue(purpose, record.keyId), expiresAt: newExpiry, now: baseNow, refused: .challengeWrongPurpose)
        }
        let expiring = try randomChallenge()
        try issue(expiring, keyId: record.keyId, purpose: .renew, expiresAt: baseNow + 1_000, now: baseNow)
        try expectRenew(record.keyId, expiring, expiresAt: newExpiry, now: baseNow + 1_000, refused: .challengeExpired)
        // The registration expired: no renewal, the key attests anew.
        try expectRenew(record.keyId, good, expiresAt: newExpiry, now: baseNow + 60_000, refused: .keyExpired)
        try expect(try fetch(record.keyId) == record, "nothing changed by the refused renewals")
        // The good challenge is still pending.
        try expectRenew(record.keyId, good, expiresAt: newExpiry, now: baseNow + 59_999, accepted: true)
        try expectRenew(other.keyId, foreign, expiresAt: newExpiry, now: baseNow, accepted: true)

        // Revoked: refused, even with a good challenge.
        _ = try wait("revokeKey") { store.revokeKey(record.keyId, completion: $0) }.get()
        let afterRevoke = try issue(.renew, record.keyId)
        try expectRenew(record.keyId, afterRevoke, expiresAt: baseNow + 900_000, now: baseNow, refused: .keyRevoked)
        try expect(try fetch(record.keyId)?.expiresAt == newExpiry, "a revoked key's expiry is not extended")
    }

    /// With a counter (App Attest assertion), the renewal advances the counter and window exactly as an
    /// assertion with window 0 would; a counter not above the stored one is `counter_replay`.
    public func renewCounterAdvancesLikeAnAssertion() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        try commit(record.keyId, counter: 10)
        let replayed = try issue(.renew, record.keyId)
        try expectRenew(record.keyId, replayed, counter: 10, expiresAt: nil, now: baseNow, refused: .counterReplay)
        try expectRenew(record.keyId, replayed, counter: 9, expiresAt: nil, now: baseNow, refused: .counterReplay)
        try expect(try fetch(record.keyId)?.counter == 10, "counter unchanged after counter_replay")
        try expectRenew(record.keyId, replayed, counter: 12, expiresAt: nil, now: baseNow, accepted: true)
        try expect(try fetch(record.keyId)?.counter == 12, "counter advanced to the renewal's")
        // The window slid as for an assertion: 10 and 12 are seen, 11 is new (window 4).
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 12, window: 4, now: baseNow, refused: .counterReplay)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 10, window: 4, now: baseNow, refused: .counterReplay)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 11, window: 4, now: baseNow, accepted: true)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 13, now: baseNow, accepted: true)
        // A jump of 200 (more than the window) clears it.
        try expectRenew(record.keyId, try issue(.renew, record.keyId), counter: 213, expiresAt: nil, now: baseNow, accepted: true)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 200, window: 128, now: baseNow, accepted: true)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 84, window: 128, now: baseNow, refused: .counterReplay)
    }

    /// Forget deletes the record and spends the challenge; a forgotten key can neither renew nor forget
    /// again (`key_unknown`); an expired registration may still be forgotten.
    public func forgetDeletesAndForgottenKeyCannotRenew() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let challenge = try issue(.forget, record.keyId)
        let renewal = try issue(.renew, record.keyId)
        try expectForget(record.keyId, challenge, counter: nil, now: baseNow, accepted: true)
        try expect(try fetch(record.keyId) == nil, "forgotten key reads nil")
        try expectRenew(record.keyId, renewal, expiresAt: baseNow + 600_000, now: baseNow, refused: .keyUnknown)
        try expectForget(record.keyId, challenge, counter: nil, now: baseNow, refused: .keyUnknown)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 1, now: baseNow, refused: .keyUnknown)

        let expired = try makeRecord(expiresAt: baseNow + 1_000)
        try registerExpectingAccepted(expired)
        try expectForget(expired.keyId, try issue(.forget, expired.keyId), counter: nil, now: baseNow + 5_000, accepted: true)
        try expect(try fetch(expired.keyId) == nil, "an expired registration can be forgotten")

        let attested = try makeRecord()
        try registerExpectingAccepted(attested)
        try commit(attested.keyId, counter: 4)
        let forget = try issue(.forget, attested.keyId)
        try expectForget(attested.keyId, forget, counter: 4, now: baseNow, refused: .counterReplay)
        try expectForget(attested.keyId, forget, counter: 5, now: baseNow, accepted: true)
        try expect(try fetch(attested.keyId) == nil, "forgotten with an assertion counter")
    }

    /// Forget refusals: unknown challenge, another key's, wrong purpose, expired challenge, revoked key.
    public func forgetRefusalsChangeNothing() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let good = try issue(.forget, record.keyId)
        try expectForget(record.keyId, try randomChallenge(), counter: nil, now: baseNow, refused: .challengeUnknown)
        let other = try makeRecord()
        try registerExpectingAccepted(other)
        try expectForget(record.keyId, try issue(.forget, other.keyId), counter: nil, now: baseNow, refused: .challengeUnknown)
        for purpose in [ChallengePurpose.assert, .renew, .attest] {
            try expectForget(record.keyId, try issue(purpose, record.keyId), counter: nil, now: baseNow, refused: .challengeWrongPurpose)
        }
        let expiring = try randomChallenge()
        try issue(expiring, keyId: record.keyId, purpose: .forget, expiresAt: baseNow + 1_000, now: baseNow)
        try expectForget(record.keyId, expiring, counter: nil, now: baseNow + 1_000, refused: .challengeExpired)
        try expect(try fetch(record.keyId) == record, "nothing changed by the refused forgets")

        _ = try wait("revokeKey") { store.revokeKey(other.keyId, completion: $0) }.get()
        try expectForget(other.keyId, try issue(.forget, other.keyId), counter: nil, now: baseNow, refused: .keyRevoked)
        try expect(try fetch(other.keyId)?.status == .revoked, "a revoked key cannot forget its revocation")

        try expectForget(record.keyId, good, counter: nil, now: baseNow, accepted: true)
    }

    /// The same renewal raced from many threads is accepted exactly once.
    public func raceSameRenewalAcceptedOnce() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let challenge = try issue(.renew, record.keyId)
        let lifecycle = try lifecycleStore
        let now = baseNow
        let outcomes = try race(count: 16) { (_, done: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void) in
            lifecycle.renewKey(record.keyId, challenge: challenge, counter: 7, expiresAt: now + 600_000, now: now, completion: done)
        }
        try expect(outcomes.filter { $0.value != nil }.count == 1, "exactly one renewal accepted, got \(outcomes)")
        try expect(outcomes.compactMap(\.refusal).allSatisfy { $0 == .challengeUnknown || $0 == .counterReplay },
                   "the others refused as spent challenge or replay")
    }

    /// The account hash is stored with the record, read back, and reported by renew and forget.
    public func accountHashRoundTripAndReported() throws {
        let account = try randomAccount()
        let record = try makeRecord(account: account)
        try registerExpectingAccepted(record)
        try expect(try fetch(record.keyId)?.accountHash == account, "the account hash round-trips")
        let renewed = try renewOutcome(record.keyId, try issue(.renew, record.keyId), counter: nil, expiresAt: nil, now: baseNow)
        try expect(renewed.value?.accountHash == account, "renew reports the account hash, got \(renewed)")
        let forgotten = try forgetOutcome(record.keyId, try issue(.forget, record.keyId), counter: nil, now: baseNow)
        try expect(forgotten.value?.accountHash == account, "forget reports the account hash, got \(forgotten)")
        let plain = try makeRecord()
        try registerExpectingAccepted(plain)
        let plainRenewed = try renewOutcome(plain.keyId, try issue(.renew, plain.keyId), counter: nil, expiresAt: nil, now: baseNow)
        try expect(plainRenewed.value != nil && plainRenewed.value?.accountHash == nil, "no account: nil, got \(plainRenewed)")
    }

    /// With a limit of 2, the third key pushes out the oldest (by createdAt); the index lists the
    /// newest two, oldest first; re-indexing a key does not count it twice.
    public func accountIndexRevokesOldestBeyondLimit() throws {
        let account = try randomAccount()
        let ids = try (0..<4).map { _ in try randomKeyId() }
        try expect(try index(account, ids[0], createdAt: baseNow, limit: 2).isEmpty, "first key: nothing evicted")
        try expect(try index(account, ids[1], createdAt: baseNow + 10, limit: 2).isEmpty, "second key: nothing evicted")
        try expect(try index(account, ids[1], createdAt: baseNow + 10, limit: 2).isEmpty, "the same key again: not counted twice")
        try expect(try index(account, ids[2], createdAt: baseNow + 20, limit: 2) == [ids[0]], "third key: the oldest evicted")
        try expect(try keys(of: account) == [ids[1], ids[2]], "the index holds the newest two, oldest first")
        try expect(try index(account, ids[3], createdAt: baseNow + 30, limit: 1) == [ids[1], ids[2]],
                   "a lower limit evicts as many as needed, oldest first")
        try expect(try keys(of: account) == [ids[3]], "one left")
        try expect(try keys(of: try randomAccount()).isEmpty, "another account has no keys")
    }

    /// Entries whose expiry passed are dropped before counting (they are not live keys); a renewal's
    /// expiry update keeps a key; removal takes a key out.
    public func accountIndexDropsExpiredAndRemoved() throws {
        let account = try randomAccount()
        let lifecycle = try lifecycleStore
        let ids = try (0..<4).map { _ in try randomKeyId() }
        _ = try index(account, ids[0], createdAt: baseNow, expiresAt: baseNow + 1_000, limit: 2)
        _ = try index(account, ids[1], createdAt: baseNow + 10, expiresAt: baseNow + 1_000, limit: 2)
        // ids[1] renewed: its expiry in the index moves.
        try wait("updateAccountKeyExpiry") { lifecycle.updateAccountKeyExpiry(account, keyId: ids[1], expiresAt: baseNow + 100_000, completion: $0) }
            .mapError { ConformanceFailure(message: "updateAccountKeyExpiry: \($0)", file: #filePath, line: #line) }.get()
        // Not in the index: nothing is added.
        try wait("updateAccountKeyExpiry") { lifecycle.updateAccountKeyExpiry(account, keyId: ids[3], expiresAt: nil, completion: $0) }
            .mapError { ConformanceFailure(message: "updateAccountKeyExpiry: \($0)", file: #filePath, line: #line) }.get()
        // At baseNow + 1 s ids[0] expired: the third key evicts nothing.
        try expect(try index(account, ids[2], createdAt: baseNow + 20, expiresAt: nil, limit: 2, now: baseNow + 1_000).isEmpty,
                   "an expired entry is dropped, not counted")
        let listed = try keys(of: account)
        try expect(listed == [ids[1], ids[2]], "expired entry gone, renewed one kept, got \(listed)")
        try expect(try wait("removeAccountKey") { lifecycle.removeAccountKey(account, keyId: ids[1], completion: $0) }.get() == true,
                   "remove finds the key")
        try expect(try wait("removeAccountKey") { lifecycle.removeAccountKey(account, keyId: ids[1], completion: $0) }.get() == false,
                   "second remove reports false")
        try expect(try keys(of: account) == [ids[2]], "removed")
    }

    /// Eight keys of one account indexed from concurrent threads with a limit of 3: every key is either
    /// in the index or evicted exactly once, and the index ends with the three newest.
    public func raceAccountIndexKeepsTheLimit() throws {
        let account = try randomAccount()
        let lifecycle = try lifecycleStore
        let ids = try (0..<8).map { _ in try randomKeyId() }
        let now = baseNow
        let boxes = ids.map { _ in CompletionBox<Result<[KeyID], StoreUnavailable>>() }
        DispatchQueue.concurrentPerform(iterations: ids.count) { i in
            lifecycle.indexAccountKey(account, keyId: ids[i], createdAt: now + Int64(i), expiresAt: nil, limit: 3, now: now) { boxes[i].put($0) }
        }
        var evicted: [KeyID] = []
        for (i, box) in boxes.enumerated() {
            guard let result = box.take(timeout: hangGuard) else { throw ConformanceFailure(message: "indexAccountKey \(i): no completion", file: #filePath, line: #line) }
            evicted += try result.mapError { ConformanceFailure(message: "indexAccountKey \(i) unavailable: \($0)", file: #filePath, line: #line) }.get()
        }
        try expect(evicted.count == 5 && Set(evicted).count == 5, "five distinct keys evicted, got \(evicted.count)")
        let kept = try keys(of: account)
        try expect(kept == Array(ids.suffix(3)), "the three newest remain, oldest first")
        try expect(Set(evicted).union(kept) == Set(ids), "every key accounted for")
    }

    // MARK: - Helpers

    /// A random account hash.
    public func randomAccount() throws -> AccountHash { try AccountHash((0..<32).map { _ in UInt8.random(in: 0...255) }) }

    /// A record (random key) with an account hash and/or expiry.
    public func makeRecord(account: AccountHash?, expiresAt: UnixMillis? = nil) throws -> KeyRecord {
        let publicKey = [0x04] + (0..<64).map { _ in UInt8.random(in: 0...255) }
        return try KeyRecord(keyId: randomKeyId(), publicKey: publicKey, environment: .production, appId: "TEAMID1234.com.example.app",
                             createdAt: baseNow - 1_234, expiresAt: expiresAt, accountHash: account)
    }

    /// Issues a fresh challenge of `purpose` for `keyId`, valid 5 minutes after `baseNow`.
    public func issue(_ purpose: ChallengePurpose, _ keyId: KeyID) throws -> Challenge {
        let challenge = try randomChallenge()
        try issue(challenge, keyId: keyId, purpose: purpose, expiresAt: baseNow + 300_000, now: baseNow)
        return challenge
    }

    /// renewKey's outcome (an unavailable store fails the check).
    public func renewOutcome(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32?, expiresAt: UnixMillis?, now: UnixMillis,
                             file: StaticString = #filePath, line: UInt = #line) throws -> StoreOutcome<KeyLifecycleChange> {
        let lifecycle = try lifecycleStore
        return try wait("renewKey", { lifecycle.renewKey(keyId, challenge: challenge, counter: counter, expiresAt: expiresAt, now: now,
                                                         completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "renewKey unavailable: \($0)", file: file, line: line) }.get()
    }

    /// forgetKey's outcome (an unavailable store fails the check).
    public func forgetOutcome(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32?, now: UnixMillis,
                              file: StaticString = #filePath, line: UInt = #line) throws -> StoreOutcome<KeyLifecycleChange> {
        let lifecycle = try lifecycleStore
        return try wait("forgetKey", { lifecycle.forgetKey(keyId, challenge: challenge, counter: counter, now: now, completion: $0) },
                        file: file, line: line)
            .mapError { ConformanceFailure(message: "forgetKey unavailable: \($0)", file: file, line: line) }.get()
    }

    /// renewKey expecting acceptance.
    public func expectRenew(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32? = nil, expiresAt: UnixMillis?, now: UnixMillis,
                            accepted: Bool, file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try renewOutcome(keyId, challenge, counter: counter, expiresAt: expiresAt, now: now, file: file, line: line)
        try expect((outcome.value != nil) == accepted, "renewKey: expected accepted=\(accepted), got \(outcome)", file: file, line: line)
    }

    /// renewKey expecting a refusal.
    public func expectRenew(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32? = nil, expiresAt: UnixMillis?, now: UnixMillis,
                            refused: StoreRefusal, file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try renewOutcome(keyId, challenge, counter: counter, expiresAt: expiresAt, now: now, file: file, line: line)
        try expect(outcome.refusal == refused, "renewKey: expected \(refused.code), got \(outcome)", file: file, line: line)
    }

    /// forgetKey expecting acceptance.
    public func expectForget(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32?, now: UnixMillis, accepted: Bool,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try forgetOutcome(keyId, challenge, counter: counter, now: now, file: file, line: line)
        try expect((outcome.value != nil) == accepted, "forgetKey: expected accepted=\(accepted), got \(outcome)", file: file, line: line)
    }

    /// forgetKey expecting a refusal.
    public func expectForget(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32?, now: UnixMillis, refused: StoreRefusal,
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try forgetOutcome(keyId, challenge, counter: counter, now: now, file: file, line: line)
        try expect(outcome.refusal == refused, "forgetKey: expected \(refused.code), got \(outcome)", file: file, line: line)
    }

    /// indexAccountKey (an unavailable store fails the check); `now` defaults to `baseNow`.
    public func index(_ account: AccountHash, _ keyId: KeyID, createdAt: UnixMillis, expiresAt: UnixMillis? = nil, limit: Int,
                      now: UnixMillis? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> [KeyID] {
        let lifecycle = try lifecycleStore
        let at = now ?? baseNow
        return try wait("indexAccountKey", { lifecycle.indexAccountKey(account, keyId: keyId, createdAt: createdAt, expiresAt: expiresAt,
                                                                      limit: limit, now: at, completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "indexAccountKey unavailable: \($0)", file: file, line: line) }.get()
    }

    /// accountKeys (an unavailable store fails the check).
    public func keys(of account: AccountHash, file: StaticString = #filePath, line: UInt = #line) throws -> [KeyID] {
        let lifecycle = try lifecycleStore
        return try wait("accountKeys", { lifecycle.accountKeys(account, completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "accountKeys unavailable: \($0)", file: file, line: line) }.get()
    }
}
