import Dispatch
import Foundation
import GatewayRules
import GatewayStore

/// A failed expectation of the store conformance suite (thrown; the XCTest case reports it).
public struct ConformanceFailure: Error, CustomStringConvertible {
    /// What was expected and what happened.
    public let message: String
    /// Where the expectation is written.
    public let file: StaticString
    /// Line of the expectation.
    public let line: UInt

    /// Human-readable form for logs.
    public var description: String { "\(file):\(line): \(message)" }
}

/// The one conformance suite every `AttestStore` must pass (DESIGN.md section 4): the memory store and
/// the Redis store run the same checks, so they have the same semantics.
///
/// Usage from an XCTest case: `try StoreConformance(store: makeStore()).registerAndFetchRoundTrip()`, one
/// test method per check in `StoreConformance.checks`. Every check uses fresh random keyIds, so one store
/// (one redis-server) may serve all checks; `closedStoreAnswersUnavailable` closes it, so it comes last.
/// Times are injected (`baseNow`); no check measures speed. A
/// completion that never comes fails the check after `hangGuard` seconds instead of hanging the run.
public struct StoreConformance: Sendable {
    /// The store under test.
    public let store: any AttestStore
    /// The injected "now" the checks start from (unix ms).
    public let baseNow: UnixMillis = 1_750_000_000_000
    /// Seconds to wait for one completion before failing as a hang.
    public let hangGuard: Double

    /// Every check, by name, for test classes that want to iterate or to assert they cover them all.
    public static let checks: [(name: String, run: @Sendable (StoreConformance) throws -> Void)] = [
        ("registerAndFetchRoundTrip", { try $0.registerAndFetchRoundTrip() }),
        ("fetchUnknownIsNil", { try $0.fetchUnknownIsNil() }),
        ("registerRefusalsChangeNothing", { try $0.registerRefusalsChangeNothing() }),
        ("reRegistrationRefusedWithoutTouchingCounter", { try $0.reRegistrationRefusedWithoutTouchingCounter() }),
        ("challengeConsumedExactlyOnce", { try $0.challengeConsumedExactlyOnce() }),
        ("commitRefusalsChangeNothing", { try $0.commitRefusalsChangeNothing() }),
        ("commitReturnsStoredFields", { try $0.commitReturnsStoredFields() }),
        ("wrongChallengeDoesNotBurnPending", { try $0.wrongChallengeDoesNotBurnPending() }),
        ("challengeBoundToKeyAndPurpose", { try $0.challengeBoundToKeyAndPurpose() }),
        ("challengeExpiryUsesInjectedNow", { try $0.challengeExpiryUsesInjectedNow() }),
        ("counterStrictlyIncreasing", { try $0.counterStrictlyIncreasing() }),
        ("windowOutOfOrderOnceAndTooOldRefused", { try $0.windowOutOfOrderOnceAndTooOldRefused() }),
        ("windowMatchesReferenceModel", { try $0.windowMatchesReferenceModel() }),
        ("storedWindowMatchesReplayWindow", { try $0.storedWindowMatchesReplayWindow() }),
        ("revokedKeyRefused", { try $0.revokedKeyRefused() }),
        ("deletedKeyUnknown", { try $0.deletedKeyUnknown() }),
        ("expiredRegistrationRefused", { try $0.expiredRegistrationRefused() }),
        ("raceSameCommitAcceptedOnce", { try $0.raceSameCommitAcceptedOnce() }),
        ("raceSameCounterDistinctChallengesAcceptedOnce", { try $0.raceSameCounterDistinctChallengesAcceptedOnce() }),
        ("raceOutOfOrderWindowEachOnce", { try $0.raceOutOfOrderWindowEachOnce() }),
        ("binaryKeyIdsAndChallenges", { try $0.binaryKeyIdsAndChallenges() }),
        ("reissueReplacesPurposeAndExpiry", { try $0.reissueReplacesPurposeAndExpiry() }),
        ("pingSucceeds", { try $0.pingSucceeds() }),
        ("nextChallengeIssuedByCommit", { try $0.nextChallengeIssuedByCommit() }),
        ("nextChallengeFollowsTheKey", { try $0.nextChallengeFollowsTheKey() }),
        ("fleetSlotsPerWindow", { try $0.fleetSlotsPerWindow() }),
        // Closes the store: keep it last (suites that run every check on one store).
        ("closedStoreAnswersUnavailable", { try $0.closedStoreAnswersUnavailable() }),
    ]

    /// Wraps a store for the checks.
    public init(store: any AttestStore, hangGuard: Double = 30) {
        self.store = store
        self.hangGuard = hangGuard
    }

    // MARK: - Checks

    /// Every field of a key record survives the store, with and without the optional ones.
    public func registerAndFetchRoundTrip() throws {
        var receipt = [UInt8]()
        for i in 0..<5_000 { receipt.append(UInt8(truncatingIfNeeded: i * 7 + i / 256)) }
        let full = try makeRecord(environment: .production, appId: "ABCDE12345.com.example.app", receipt: receipt,
                                  riskMetric: 4_000_000_000, receiptExpiresAt: baseNow + 86_400_000,
                                  expiresAt: baseNow + 30 * 86_400_000)
        try registerExpectingAccepted(full)
        try expect(try fetch(full.keyId) == full, "fetchKey returns the registered record with all fields")

        let minimal = try makeRecord(environment: .development, appId: "X.y")
        try registerExpectingAccepted(minimal)
        let fetched = try fetch(minimal.keyId)
        try expect(fetched == minimal, "fetchKey returns the minimal record (optional fields nil), got \(String(describing: fetched))")
        try expect(fetched?.receipt == nil && fetched?.expiresAt == nil && fetched?.receiptRiskMetric == nil,
                   "absent optional fields read back as nil")
        try expect(fetched?.status == .active && fetched?.trustTier == .appAttest && fetched?.counter == 0,
                   "a new record is active, app_attest tier, counter 0")
    }

    /// An unknown keyId reads as nil, not as an error.
    public func fetchUnknownIsNil() throws {
        try expect(try fetch(randomKeyId()) == nil, "fetchKey of an unknown keyId is nil")
    }

    /// Each registration refusal (unknown, other key's, expired, wrong purpose) writes nothing and leaves
    /// the challenges pending.
    public func registerRefusalsChangeNothing() throws {
        let record = try makeRecord()
        let other = try randomKeyId()
        let now = baseNow

        // Never issued.
        try expectRegister(record, challenge: try randomChallenge(), now: now, refused: .challengeUnknown)
        // Issued for another key.
        let foreign = try randomChallenge()
        try issue(foreign, keyId: other, purpose: .attest, expiresAt: now + 300_000, now: now)
        try expectRegister(record, challenge: foreign, now: now, refused: .challengeUnknown)
        // Expired (now == expiresAt) per the injected clock.
        let expiring = try randomChallenge()
        try issue(expiring, keyId: record.keyId, purpose: .attest, expiresAt: now + 1_000, now: now)
        try expectRegister(record, challenge: expiring, now: now + 1_000, refused: .challengeExpired)
        try expectRegister(record, challenge: expiring, now: now + 50_000, refused: .challengeExpired)
        // Wrong purpose.
        let assertChallenge = try randomChallenge()
        try issue(assertChallenge, keyId: record.keyId, purpose: .assert, expiresAt: now + 300_000, now: now)
        try expectRegister(record, challenge: assertChallenge, now: now, refused: .challengeWrongPurpose)
        try expect(try fetch(record.keyId) == nil, "no key record after refused registrations")

        // The expired challenge was not consumed: at an earlier injected time it still registers the key.
        try expectRegister(record, challenge: expiring, now: now + 999, accepted: true)
        try expect(try fetch(record.keyId) == record, "registered after the refusals")
        // The assert challenge is still pending and usable for its purpose.
        try expectCommit(record.keyId, assertChallenge, counter: 1, now: now, accepted: true)
        // The foreign challenge is still pending for its own key.
        let otherRecord = try makeRecord(keyId: other)
        try expectRegister(otherRecord, challenge: foreign, now: now, accepted: true)
    }

    /// Re-attesting a registered key is refused with `key_exists`; counter, window, record and the
    /// challenge stay as they were.
    public func reRegistrationRefusedWithoutTouchingCounter() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        for counter in [1, 2, 5] as [UInt32] { try commit(record.keyId, counter: counter) }
        let before = try fetch(record.keyId)
        try expect(before?.counter == 5, "counter advanced to 5 before re-registration")

        let again = try makeRecord(keyId: record.keyId, environment: .development, appId: "OTHER.app")
        let challenge = try randomChallenge()
        try issue(challenge, keyId: record.keyId, purpose: .attest, expiresAt: baseNow + 300_000, now: baseNow)
        try expectRegister(again, challenge: challenge, now: baseNow, refused: .keyExists)
        // Still key_exists (not challenge_unknown): the challenge was not consumed.
        try expectRegister(again, challenge: challenge, now: baseNow, refused: .keyExists)
        try expect(try fetch(record.keyId) == before, "record (counter 5, window, app, environment) unchanged")
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 5, now: baseNow, refused: .counterReplay)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 6, now: baseNow, accepted: true)
    }

    /// A challenge is spent by exactly one successful register or commit.
    public func challengeConsumedExactlyOnce() throws {
        let record = try makeRecord()
        let attest = try randomChallenge()
        try issue(attest, keyId: record.keyId, purpose: .attest, expiresAt: baseNow + 300_000, now: baseNow)
        try expectRegister(record, challenge: attest, now: baseNow, accepted: true)
        try expectRegister(record, challenge: attest, now: baseNow, refused: .challengeUnknown)

        let assert = try issueAssert(record.keyId)
        try expectCommit(record.keyId, assert, counter: 1, now: baseNow, accepted: true)
        try expectCommit(record.keyId, assert, counter: 2, now: baseNow, refused: .challengeUnknown)
        try expect(try fetch(record.keyId)?.counter == 1, "the refused reuse did not advance the counter")
    }

    /// Every commit refusal in the order of the contract, each leaving key record and challenge unchanged.
    public func commitRefusalsChangeNothing() throws {
        let now = baseNow
        // key_unknown: a pending assert challenge under an unregistered keyId stays pending.
        let unregistered = try randomKeyId()
        let pendingForUnregistered = try issueAssert(unregistered)
        try expectCommit(unregistered, pendingForUnregistered, counter: 1, now: now, refused: .keyUnknown)
        try expect(try fetch(unregistered) == nil, "key_unknown creates no record")
        try registerExpectingAccepted(try makeRecord(keyId: unregistered))
        try expectCommit(unregistered, pendingForUnregistered, counter: 1, now: now, accepted: true)

        let record = try makeRecord()
        try registerExpectingAccepted(record)
        try commit(record.keyId, counter: 10)
        let snapshot = try fetch(record.keyId)

        let pending = try issueAssert(record.keyId)
        // challenge_unknown
        try expectCommit(record.keyId, try randomChallenge(), counter: 11, now: now, refused: .challengeUnknown)
        try expect(try fetch(record.keyId) == snapshot, "unchanged after challenge_unknown")
        // challenge_expired
        try expectCommit(record.keyId, pending, counter: 11, now: now + 300_000, refused: .challengeExpired)
        try expect(try fetch(record.keyId) == snapshot, "unchanged after challenge_expired")
        // challenge_wrong_purpose
        let attest = try randomChallenge()
        try issue(attest, keyId: record.keyId, purpose: .attest, expiresAt: now + 300_000, now: now)
        try expectCommit(record.keyId, attest, counter: 11, now: now, refused: .challengeWrongPurpose)
        try expect(try fetch(record.keyId) == snapshot, "unchanged after challenge_wrong_purpose")
        // counter_replay: equal and lower
        try expectCommit(record.keyId, pending, counter: 10, now: now, refused: .counterReplay)
        try expectCommit(record.keyId, pending, counter: 3, now: now, refused: .counterReplay)
        try expectCommit(record.keyId, pending, counter: 0, now: now, refused: .counterReplay)
        try expect(try fetch(record.keyId) == snapshot, "unchanged after counter_replay")
        // The same pending challenge still commits: none of the refusals consumed it.
        try expectCommit(record.keyId, pending, counter: 11, now: now, accepted: true)
        // The attest challenge is still pending too (wrong purpose did not consume it): key_exists, not unknown.
        try expectRegister(record, challenge: attest, now: now, refused: .keyExists)
        try expect(try fetch(record.keyId)?.counter == 11, "counter 11 after the accepted commit")
    }

    /// An accepted commit returns the highest stored counter (what the gateway reads), for a key
    /// with a registration expiry still in the future.
    public func commitReturnsStoredFields() throws {
        let record = try makeRecord(environment: .development, appId: "TEAM123456.org.example.Fields",
                                    expiresAt: baseNow + 86_400_000)
        try registerExpectingAccepted(record)
        let outcome = try commitOutcome(record.keyId, try issueAssert(record.keyId), counter: 7, window: 0, now: baseNow)
        guard case .accepted(let fields) = outcome else { throw failure("commit refused: \(outcome)") }
        try expect(fields.counter == 7, "stored counter returned, got \(fields.counter)")
        let later = try commitOutcome(record.keyId, try issueAssert(record.keyId), counter: 5, window: 4, now: baseNow)
        guard case .accepted(let inWindow) = later else { throw failure("commit inside the window refused: \(later)") }
        try expect(inWindow.counter == 7, "an out-of-order counter inside the window leaves the highest at 7, got \(inWindow.counter)")
    }

    /// A commit with a wrong challenge value fails without burning the pending challenge.
    public func wrongChallengeDoesNotBurnPending() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let pending = try issueAssert(record.keyId)
        var wrong = pending.bytes
        wrong[wrong.count - 1] ^= 0x01
        try expectCommit(record.keyId, try Challenge(wrong), counter: 1, now: baseNow, refused: .challengeUnknown)
        try expectCommit(record.keyId, try Challenge(pending.bytes.dropLast()), counter: 1, now: baseNow,
                         refused: .challengeUnknown)
        try expectCommit(record.keyId, pending, counter: 1, now: baseNow, accepted: true)
    }

    /// A challenge only works for the keyId and purpose it was issued for.
    public func challengeBoundToKeyAndPurpose() throws {
        let a = try makeRecord(), b = try makeRecord()
        try registerExpectingAccepted(a)
        try registerExpectingAccepted(b)
        let forA = try issueAssert(a.keyId)
        try expectCommit(b.keyId, forA, counter: 1, now: baseNow, refused: .challengeUnknown)
        try expect(try fetch(b.keyId)?.counter == 0, "b unchanged")
        try expectCommit(a.keyId, forA, counter: 1, now: baseNow, accepted: true)
        // An assert challenge never registers a key, an attest challenge never commits.
        let attestForB = try randomChallenge()
        try issue(attestForB, keyId: b.keyId, purpose: .attest, expiresAt: baseNow + 60_000, now: baseNow)
        try expectCommit(b.keyId, attestForB, counter: 1, now: baseNow, refused: .challengeWrongPurpose)
    }

    /// Expiry is decided by the caller's `now`: `now < expiresAt` passes, `now >= expiresAt` is
    /// `challenge_expired` (present but expired, not unknown).
    public func challengeExpiryUsesInjectedNow() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let expiresAt = baseNow + 300_000
        let late = try randomChallenge()
        try issue(late, keyId: record.keyId, purpose: .assert, expiresAt: expiresAt, now: baseNow)
        try expectCommit(record.keyId, late, counter: 1, now: expiresAt, refused: .challengeExpired)
        try expectCommit(record.keyId, late, counter: 1, now: expiresAt + 10_000, refused: .challengeExpired)
        try expectCommit(record.keyId, late, counter: 1, now: expiresAt - 1, accepted: true)
        // Issued "in the past" relative to the store's clock: only the injected times matter.
        let old = try randomChallenge()
        try issue(old, keyId: record.keyId, purpose: .assert, expiresAt: 1_000_300_000, now: 1_000_000_000)
        try expectCommit(record.keyId, old, counter: 2, now: 1_000_300_000, refused: .challengeExpired)
        try expectCommit(record.keyId, old, counter: 2, now: 1_000_299_999, accepted: true)
    }

    /// With window 0 the counter must strictly increase; gaps are fine.
    public func counterStrictlyIncreasing() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let steps: [(UInt32, Bool)] = [(0, false), (1, true), (1, false), (3, true), (2, false), (3, false),
                                       (4, true), (1_000, true), (999, false), (UInt32.max, true), (UInt32.max, false)]
        for (counter, accepted) in steps {
            try expectCommit(record.keyId, try issueAssert(record.keyId), counter: counter, window: 0, now: baseNow,
                             accepted: accepted, refusedAs: .counterReplay)
        }
        try expect(try fetch(record.keyId)?.counter == UInt32.max, "counter at UInt32.max")
    }

    /// Inside the window an out-of-order counter passes exactly once; below it, it is refused.
    public func windowOutOfOrderOnceAndTooOldRefused() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let w = 8
        let steps: [(UInt32, Bool)] = [
            (10, true), (7, true), (9, true), (7, false), (8, true), (10, false), (2, true) /* 10-2 = 8 = W */,
            (1, false) /* 9 below */, (2, false), (0, false) /* the attestation's counter */, (20, true),
            (12, true) /* 8 below 20 */, (11, false) /* 9 below */, (10, false), (19, true), (19, false),
            (200, true), (192, true), (191, false), (20, false),
        ]
        for (counter, accepted) in steps {
            try expectCommit(record.keyId, try issueAssert(record.keyId), counter: counter, window: w, now: baseNow,
                             accepted: accepted, refusedAs: .counterReplay)
        }
        try expect(try fetch(record.keyId)?.counter == 200, "highest counter 200")
        // Counters accepted earlier stay refused when the window widens (the bitmap is kept at any W).
        for counter: UInt32 in [192, 200, 20] {
            try expectCommit(record.keyId, try issueAssert(record.keyId), counter: counter, window: ReplayWindow.capacity,
                             now: baseNow, accepted: false, refusedAs: .counterReplay)
        }
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 150, window: ReplayWindow.capacity,
                         now: baseNow, accepted: true)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 150, window: ReplayWindow.capacity,
                         now: baseNow, accepted: false, refusedAs: .counterReplay)
        // Windows above the capacity are clamped to it.
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 200 - 128, window: 10_000,
                         now: baseNow, accepted: true)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 200 - 129, window: 10_000,
                         now: baseNow, accepted: false, refusedAs: .counterReplay)
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 199, window: -5,
                         now: baseNow, accepted: false, refusedAs: .counterReplay)
    }

    /// A seeded random walk of counters and window sizes agrees with a naive set-based model.
    public func windowMatchesReferenceModel() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        var rng = SplitMix64(seed: 0x5eed_a77e_57)
        var seen: Set<UInt32> = [0]
        var highest: UInt32 = 0
        let sizes = [0, 1, 7, 8, 9, 31, 63, 64, 65, 100, 127, 128]
        for step in 0..<300 {
            let size = sizes[Int(rng.next() % UInt64(sizes.count))]
            // Mostly below the highest; above it by up to 149 (slides of 1...63, 64...127, exactly 128, beyond).
            let delta = step % 25 == 0 ? 128 : Int64(rng.next() % 400) - 250
            let candidate = Int64(highest) + (delta == 0 ? 1 : delta)
            let counter = UInt32(clamping: max(candidate, 0))
            let distance = Int64(highest) - Int64(counter)
            let expected = counter > highest || (distance >= 1 && distance <= Int64(size) && !seen.contains(counter))
            try expectCommit(record.keyId, try issueAssert(record.keyId), counter: counter, window: size, now: baseNow,
                             accepted: expected, refusedAs: .counterReplay, context: "step \(step) counter \(counter) W \(size) H \(highest)")
            if expected { seen.insert(counter); highest = max(highest, counter) }
        }
        try expect(try fetch(record.keyId)?.counter == highest, "stored highest counter matches the model")
    }

    /// The stored 16-byte window after each commit equals `ReplayWindow.admit`'s, bit for bit: a walk
    /// that mostly advances by 1...8 (the Redis script's fast path), with in-window counters, slides
    /// of 9...127, exactly 128 and beyond (its general path), from an empty and from a full window.
    public func storedWindowMatchesReplayWindow() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        var rng = SplitMix64(seed: 0x0b17_5417)
        var model = ReplayWindow()
        var highest: UInt32 = 0
        let advances: [Int64] = [1, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 15, 16, 17, 63, 64, 127, 128, 129, 300]
        for step in 0..<160 {
            let back = rng.next() % 4 == 0
            let delta = back ? -Int64(rng.next() % 130) : advances[Int(rng.next() % UInt64(advances.count))]
            let counter = UInt32(clamping: max(Int64(highest) + delta, 0))
            let admitted = model.admit(counter: counter, highest: highest, size: ReplayWindow.capacity)
            try expectCommit(record.keyId, try issueAssert(record.keyId), counter: counter, window: ReplayWindow.capacity,
                             now: baseNow, accepted: admitted != nil, refusedAs: .counterReplay,
                             context: "step \(step) counter \(counter) H \(highest)")
            if let admitted { model = admitted.window; highest = admitted.highest }
            let stored = try fetch(record.keyId)
            try expect(stored?.counter == highest && stored?.replayWindow == model,
                       "step \(step) counter \(counter): stored \(stored?.replayWindow.bytes ?? []) H \(stored?.counter ?? 0), expected \(model.bytes) H \(highest)")
        }
    }

    /// `commitAssertion(…issuing:)` accepted: the next challenge is pending under the key with
    /// purpose `assert` and the given expiry, bound to that key, and spent by exactly one commit.
    public func nextChallengeIssuedByCommit() throws {
        let record = try makeRecord(), other = try makeRecord()
        try registerExpectingAccepted(record)
        try registerExpectingAccepted(other)
        let next = NextChallenge(challenge: try randomChallenge(), expiresAt: baseNow + 120_000)
        let committed = try commitIssuing(record.keyId, try issueAssert(record.keyId), counter: 1, now: baseNow, next: next)
        try expect(committed == AssertionCommit(outcome: .accepted(CommittedAssertion(counter: 1)), nextIssued: true),
                   "accepted with the next challenge stored, got \(committed)")
        try expect(try fetch(record.keyId)?.counter == 1, "the commit itself happened")
        // Bound to its key (another key's commit does not burn it), purpose assert, expiry as given.
        try expectCommit(other.keyId, next.challenge, counter: 1, now: baseNow, refused: .challengeUnknown)
        try expectRegister(record, challenge: next.challenge, now: baseNow, refused: .challengeWrongPurpose)
        try expectCommit(record.keyId, next.challenge, counter: 2, now: next.expiresAt, refused: .challengeExpired)
        // Single use.
        try expectCommit(record.keyId, next.challenge, counter: 2, now: next.expiresAt - 1, accepted: true)
        try expectCommit(record.keyId, next.challenge, counter: 3, now: baseNow, refused: .challengeUnknown)
        try expect(try fetch(other.keyId)?.counter == 0 && fetch(record.keyId)?.counter == 2, "counters 0 and 2")
    }

    /// The next challenge follows the key, not the outcome: stored after the challenge and counter
    /// refusals of an active key (record and presented challenge unchanged), never for `key_unknown`,
    /// `key_revoked` or `key_expired`.
    public func nextChallengeFollowsTheKey() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        try commit(record.keyId, counter: 5)
        let snapshot = try fetch(record.keyId)
        let pending = try issueAssert(record.keyId)
        let attest = try randomChallenge()
        try issue(attest, keyId: record.keyId, purpose: .attest, expiresAt: baseNow + 300_000, now: baseNow)
        let refusals: [(Challenge, UInt32, UnixMillis, StoreRefusal)] = [
            (try randomChallenge(), 6, baseNow, .challengeUnknown),
            (pending, 6, baseNow + 300_000, .challengeExpired),
            (attest, 6, baseNow, .challengeWrongPurpose),
            (pending, 5, baseNow, .counterReplay),
        ]
        var nexts: [Challenge] = []
        for (presented, counter, now, refusal) in refusals {
            let next = NextChallenge(challenge: try randomChallenge(), expiresAt: baseNow + 600_000)
            let answer = try commitIssuing(record.keyId, presented, counter: counter, now: now, next: next)
            try expect(answer == AssertionCommit(outcome: .refused(refusal), nextIssued: true),
                       "\(refusal.code) with the next challenge stored, got \(answer)")
            try expect(try fetch(record.keyId) == snapshot, "record unchanged after \(refusal.code)")
            nexts.append(next.challenge)
        }
        // The presented challenge survived every refusal, and each next challenge works once.
        try expectCommit(record.keyId, pending, counter: 6, now: baseNow, accepted: true)
        for (i, next) in nexts.enumerated() {
            try expectCommit(record.keyId, next, counter: 7 + UInt32(i), now: baseNow, accepted: true)
        }

        // key_unknown: nothing stored (the key registered afterwards does not find it).
        let unknown = try randomKeyId()
        let forUnknown = NextChallenge(challenge: try randomChallenge(), expiresAt: baseNow + 300_000)
        let unknownAnswer = try commitIssuing(unknown, try randomChallenge(), counter: 1, now: baseNow, next: forUnknown)
        try expect(unknownAnswer == AssertionCommit(outcome: .refused(.keyUnknown), nextIssued: false), "got \(unknownAnswer)")
        try registerExpectingAccepted(try makeRecord(keyId: unknown))
        try expectCommit(unknown, forUnknown.challenge, counter: 1, now: baseNow, refused: .challengeUnknown)

        // key_revoked and key_expired: nothing stored (registering with it finds no challenge at all).
        let revoked = try makeRecord()
        try registerExpectingAccepted(revoked)
        try expect(try wait("revokeKey") { store.revokeKey(revoked.keyId, completion: $0) }.get() == true, "revoked")
        let forRevoked = NextChallenge(challenge: try randomChallenge(), expiresAt: baseNow + 300_000)
        let revokedAnswer = try commitIssuing(revoked.keyId, try issueAssert(revoked.keyId), counter: 1, now: baseNow,
                                              next: forRevoked)
        try expect(revokedAnswer == AssertionCommit(outcome: .refused(.keyRevoked), nextIssued: false), "got \(revokedAnswer)")
        try expectRegister(revoked, challenge: forRevoked.challenge, now: baseNow, refused: .challengeUnknown)

        let expiring = try makeRecord(expiresAt: baseNow + 1_000)
        try registerExpectingAccepted(expiring)
        let forExpired = NextChallenge(challenge: try randomChallenge(), expiresAt: baseNow + 300_000)
        let expiredAnswer = try commitIssuing(expiring.keyId, try issueAssert(expiring.keyId), counter: 1, now: baseNow + 1_000,
                                              next: forExpired)
        try expect(expiredAnswer == AssertionCommit(outcome: .refused(.keyExpired), nextIssued: false), "got \(expiredAnswer)")
        try expectRegister(expiring, challenge: forExpired.challenge, now: baseNow, refused: .challengeUnknown)
    }

    /// `acquireFleetSlot`: `limit` uses per window, then refused with the time left in the window;
    /// a new window starts over; names count apart.
    public func fleetSlotsPerWindow() throws {
        let name = "conformance" + String(UInt32.random(in: 0...UInt32.max))
        let window: UnixMillis = 60_000
        let start = (baseNow / window + 1) * window  // the start of a window
        for i in 0..<3 {
            try expect(try fleetSlot(name, limit: 3, window: window, now: start + UnixMillis(i) * 1_000) == .granted, "use \(i + 1) of 3")
        }
        try expect(try fleetSlot(name, limit: 3, window: window, now: start + 45_000) == .refused(retryAfterMillis: 15_000),
                   "the 4th use is refused with the 15 s left in the window")
        try expect(try fleetSlot(name, limit: 3, window: window, now: start + 59_999) == .refused(retryAfterMillis: 1), "still refused")
        try expect(try fleetSlot(name + "-other", limit: 3, window: window, now: start + 45_000) == .granted, "another name counts apart")
        try expect(try fleetSlot(name, limit: 3, window: window, now: start + window) == .granted, "the next window starts over")
        try expect(try fleetSlot(name, limit: 1, window: window, now: start + window + 1) == .refused(retryAfterMillis: window - 1),
                   "limit 1: the second use of the window is refused")
    }

    /// A revoked key is refused with `key_revoked` and its challenge stays pending.
    public func revokedKeyRefused() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        try commit(record.keyId, counter: 3)
        try expect(try wait("revokeKey") { store.revokeKey(record.keyId, completion: $0) }.get() == true, "revokeKey finds the key")
        let revoked = try fetch(record.keyId)
        try expect(revoked?.status == .revoked && revoked?.counter == 3, "status revoked, counter kept")
        let pending = try issueAssert(record.keyId)
        try expectCommit(record.keyId, pending, counter: 4, now: baseNow, refused: .keyRevoked)
        try expect(try fetch(record.keyId) == revoked, "unchanged after key_revoked")
        try expect(try wait("revokeKey") { store.revokeKey(try randomKeyId(), completion: $0) }.get() == false,
                   "revokeKey of an unknown key reports false")
        try expect(try fetch(record.keyId)?.status == .revoked, "still revoked")
    }

    /// A deleted key answers `key_unknown`; deleting twice reports false.
    public func deletedKeyUnknown() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        try expect(try wait("deleteKey") { store.deleteKey(record.keyId, completion: $0) }.get() == true, "deleteKey finds the key")
        try expect(try wait("deleteKey") { store.deleteKey(record.keyId, completion: $0) }.get() == false, "second delete reports false")
        try expect(try fetch(record.keyId) == nil, "deleted key reads nil")
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 1, now: baseNow, refused: .keyUnknown)
    }

    /// A registration with `expiresAt` is refused with `key_expired` once the injected now reaches it.
    public func expiredRegistrationRefused() throws {
        let record = try makeRecord(expiresAt: baseNow + 1_000)
        try registerExpectingAccepted(record)
        let pending = try issueAssert(record.keyId)
        try expectCommit(record.keyId, pending, counter: 1, now: baseNow + 1_000, refused: .keyExpired)
        try expect(try fetch(record.keyId)?.counter == 0, "unchanged after key_expired")
        try expectCommit(record.keyId, pending, counter: 1, now: baseNow + 999, accepted: true)
    }

    /// The same commit raced from many threads is accepted exactly once.
    public func raceSameCommitAcceptedOnce() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let challenge = try issueAssert(record.keyId)
        let outcomes = try race(count: 32) { _, done in
            store.commitAssertion(keyId: record.keyId, challenge: challenge, counter: 1, window: 0, now: baseNow, completion: done)
        }
        let accepted = outcomes.filter { $0.value != nil }.count
        try expect(accepted == 1, "exactly one of 32 identical commits accepted, got \(accepted)")
        try expect(outcomes.allSatisfy { $0.value != nil || $0.refusal == .challengeUnknown || $0.refusal == .counterReplay },
                   "the others are challenge_unknown or counter_replay: \(outcomes)")
        try expect(try fetch(record.keyId)?.counter == 1, "counter 1")
    }

    /// Distinct challenges racing with the same counter: one accepted, the others refused as replays
    /// without consuming their challenges.
    public func raceSameCounterDistinctChallengesAcceptedOnce() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let challenges = try (0..<16).map { _ in try issueAssert(record.keyId) }
        let outcomes = try race(count: challenges.count) { i, done in
            store.commitAssertion(keyId: record.keyId, challenge: challenges[i], counter: 1, window: 16, now: baseNow,
                                  completion: done)
        }
        let acceptedIndexes = outcomes.indices.filter { outcomes[$0].value != nil }
        try expect(acceptedIndexes.count == 1, "exactly one accepted, got \(acceptedIndexes.count)")
        try expect(outcomes.allSatisfy { $0.value != nil || $0.refusal == .counterReplay }, "others counter_replay: \(outcomes)")
        // The refused ones kept their challenges.
        var next: UInt32 = 2
        for i in challenges.indices where !acceptedIndexes.contains(i) {
            try expectCommit(record.keyId, challenges[i], counter: next, now: baseNow, accepted: true)
            next += 1
        }
    }

    /// Counters arriving out of order on parallel connections inside the window pass exactly once each.
    public func raceOutOfOrderWindowEachOnce() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        var shuffled = Array(UInt32(1)...UInt32(64))
        var rng = SplitMix64(seed: 42)
        for i in stride(from: shuffled.count - 1, to: 0, by: -1) { shuffled.swapAt(i, Int(rng.next() % UInt64(i + 1))) }
        let counters = shuffled
        let first = try (0..<64).map { _ in try issueAssert(record.keyId) }
        let outcomes = try race(count: 64) { i, done in
            store.commitAssertion(keyId: record.keyId, challenge: first[i], counter: counters[i], window: 64, now: baseNow,
                                  completion: done)
        }
        try expect(outcomes.allSatisfy { $0.value != nil }, "all 64 distinct counters accepted: \(outcomes.map(\.refusal))")
        try expect(try fetch(record.keyId)?.counter == 64, "highest 64")
        let again = try (0..<64).map { _ in try issueAssert(record.keyId) }
        let replays = try race(count: 64) { i, done in
            store.commitAssertion(keyId: record.keyId, challenge: again[i], counter: counters[i], window: 64, now: baseNow,
                                  completion: done)
        }
        try expect(replays.allSatisfy { $0.refusal == .counterReplay }, "every counter replayed is refused")
    }

    /// keyIds and challenges made of every byte value (0x00, CR/LF, `{`, `}`, 0xff...) work and stay distinct.
    public func binaryKeyIdsAndChallenges() throws {
        var records = [KeyRecord]()
        // Every byte value exactly once across the eight keyIds, in a fresh order per run: suites that
        // share one redis-server never meet a keyId registered by an earlier run (a one-byte salt
        // collided one run in 256).
        let values = (0...255).map(UInt8.init).shuffled()
        for block in 0..<8 {
            records.append(try makeRecord(keyId: try KeyID(Array(values[block * 32..<(block + 1) * 32]))))
        }
        for record in records { try registerExpectingAccepted(record) }
        for block in 0..<4 {
            var bytes = (0..<64).map { UInt8(block * 64 + $0) }
            bytes[0] = UInt8.random(in: 0...255)
            let challenge = try Challenge(bytes)
            let record = records[block]
            try issue(challenge, keyId: record.keyId, purpose: .assert, expiresAt: baseNow + 60_000, now: baseNow)
            try expectCommit(records[block + 4].keyId, challenge, counter: 1, now: baseNow, refused: .challengeUnknown)
            try expectCommit(record.keyId, challenge, counter: 1, now: baseNow, accepted: true)
        }
        for (i, record) in records.enumerated() {
            try expect(try fetch(record.keyId)?.counter == (i < 4 ? 1 : 0), "binary keyId \(i) kept its own counter")
        }
        let zeros = try Challenge([UInt8](repeating: 0, count: 16))
        let key = records[7].keyId
        try issue(zeros, keyId: key, purpose: .assert, expiresAt: baseNow + 60_000, now: baseNow)
        try expectCommit(key, try Challenge([UInt8](repeating: 0, count: 17)), counter: 1, now: baseNow, refused: .challengeUnknown)
        try expectCommit(key, zeros, counter: 1, now: baseNow, accepted: true)
    }

    /// Issuing the same value again replaces its purpose and expiry.
    public func reissueReplacesPurposeAndExpiry() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let challenge = try randomChallenge()
        try issue(challenge, keyId: record.keyId, purpose: .attest, expiresAt: baseNow + 1_000, now: baseNow)
        try issue(challenge, keyId: record.keyId, purpose: .assert, expiresAt: baseNow + 5_000, now: baseNow)
        try expectCommit(record.keyId, challenge, counter: 1, now: baseNow + 2_000, accepted: true)
    }

    /// `ping` succeeds on a healthy store.
    public func pingSucceeds() throws {
        try wait("ping") { store.ping(completion: $0) }.get()
    }

    /// After `close()` (`AttestStore.close`) every operation completes exactly once, without hanging or
    /// crashing, with `.failure(StoreUnavailable(.closed))`: never a verdict, never the state from before.
    /// Closing again is harmless. Closes the store: run it last.
    public func closedStoreAnswersUnavailable() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let challenge = try issueAssert(record.keyId)
        store.close()
        store.close()

        func expectClosed<T>(_ what: String, _ result: Result<T, StoreUnavailable>, file: StaticString = #filePath,
                             line: UInt = #line) throws {
            guard case .failure(let error) = result else {
                throw failure("\(what) after close answered \(result), expected store_unavailable(closed)", file: file, line: line)
            }
            try expect(error.reason == .closed, "\(what) after close: \(error), expected store_unavailable(closed)", file: file, line: line)
        }
        try expectClosed("fetchKey", wait("fetchKey") { store.fetchKey(record.keyId, completion: $0) })
        try expectClosed("commitAssertion", wait("commitAssertion") {
            store.commitAssertion(keyId: record.keyId, challenge: challenge, counter: 1, window: 0, now: baseNow, completion: $0)
        })
        let other = try makeRecord()
        let attest = try randomChallenge()
        try expectClosed("issueChallenge", wait("issueChallenge") {
            store.issueChallenge(attest, keyId: other.keyId, purpose: .attest, expiresAt: baseNow + 300_000, now: baseNow, completion: $0)
        })
        try expectClosed("registerKey", wait("registerKey") { store.registerKey(other, challenge: attest, now: baseNow, completion: $0) })
        try expectClosed("revokeKey", wait("revokeKey") { store.revokeKey(record.keyId, completion: $0) })
        try expectClosed("deleteKey", wait("deleteKey") { store.deleteKey(record.keyId, completion: $0) })
        try expectClosed("ping", wait("ping") { store.ping(completion: $0) })
    }

    // MARK: - Helpers (public so store-specific tests can reuse them)

    /// A random 32-byte keyId.
    public func randomKeyId() throws -> KeyID { try KeyID((0..<32).map { _ in UInt8.random(in: 0...255) }) }

    /// A random 32-byte challenge.
    public func randomChallenge() throws -> Challenge { try Challenge((0..<32).map { _ in UInt8.random(in: 0...255) }) }

    /// A record with a random public key (and keyId unless given).
    public func makeRecord(keyId: KeyID? = nil, environment: AppAttestEnvironment = .production, appId: String = "TEAMID1234.com.example.app",
                           receipt: [UInt8]? = nil, riskMetric: UInt32? = nil, receiptExpiresAt: UnixMillis? = nil,
                           expiresAt: UnixMillis? = nil) throws -> KeyRecord {
        let publicKey = [0x04] + (0..<64).map { _ in UInt8.random(in: 0...255) }
        return try KeyRecord(keyId: keyId ?? randomKeyId(), publicKey: publicKey, environment: environment, appId: appId,
                             createdAt: baseNow - 1_234, receipt: receipt, receiptRiskMetric: riskMetric,
                             receiptExpiresAt: receiptExpiresAt, expiresAt: expiresAt)
    }

    /// Calls `start` with a completion and waits for it (failing instead of hanging after `hangGuard`).
    public func wait<T: Sendable>(_ what: String, _ start: (@escaping @Sendable (T) -> Void) throws -> Void,
                                  file: StaticString = #filePath, line: UInt = #line) throws -> T {
        let box = CompletionBox<T>()
        try start { box.put($0) }
        guard let value = box.take(timeout: hangGuard) else {
            throw ConformanceFailure(message: "\(what): no completion within \(hangGuard) s", file: file, line: line)
        }
        guard box.calls == 1 else {
            throw ConformanceFailure(message: "\(what): completion called \(box.calls) times", file: file, line: line)
        }
        return value
    }

    /// issueChallenge, expecting success.
    public func issue(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis, now: UnixMillis,
                      file: StaticString = #filePath, line: UInt = #line) throws {
        try wait("issueChallenge", { store.issueChallenge(challenge, keyId: keyId, purpose: purpose, expiresAt: expiresAt,
                                                          now: now, completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "issueChallenge failed: \($0)", file: file, line: line) }.get()
    }

    /// Issues a fresh assert challenge valid for 5 minutes after `baseNow`.
    public func issueAssert(_ keyId: KeyID) throws -> Challenge {
        let challenge = try randomChallenge()
        try issue(challenge, keyId: keyId, purpose: .assert, expiresAt: baseNow + 300_000, now: baseNow)
        return challenge
    }

    /// Issues an attest challenge and registers `record`, expecting acceptance.
    public func registerExpectingAccepted(_ record: KeyRecord, file: StaticString = #filePath, line: UInt = #line) throws {
        let challenge = try randomChallenge()
        try issue(challenge, keyId: record.keyId, purpose: .attest, expiresAt: baseNow + 300_000, now: baseNow, file: file, line: line)
        try expectRegister(record, challenge: challenge, now: baseNow, accepted: true, file: file, line: line)
    }

    /// registerKey, expecting a refusal.
    public func expectRegister(_ record: KeyRecord, challenge: Challenge, now: UnixMillis, refused: StoreRefusal,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try registerOutcome(record, challenge: challenge, now: now, file: file, line: line)
        try expect(outcome.refusal == refused, "registerKey: expected \(refused.code), got \(outcome)", file: file, line: line)
    }

    /// registerKey, expecting acceptance.
    public func expectRegister(_ record: KeyRecord, challenge: Challenge, now: UnixMillis, accepted: Bool,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try registerOutcome(record, challenge: challenge, now: now, file: file, line: line)
        try expect((outcome.value != nil) == accepted, "registerKey: expected accepted=\(accepted), got \(outcome)", file: file, line: line)
    }

    /// registerKey's outcome (an unavailable store fails the check).
    public func registerOutcome(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                                file: StaticString = #filePath, line: UInt = #line) throws -> StoreOutcome<Void> {
        try wait("registerKey", { store.registerKey(record, challenge: challenge, now: now, completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "registerKey unavailable: \($0)", file: file, line: line) }.get()
    }

    /// fetchKey (an unavailable store fails the check).
    public func fetch(_ keyId: KeyID, file: StaticString = #filePath, line: UInt = #line) throws -> KeyRecord? {
        try wait("fetchKey", { store.fetchKey(keyId, completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "fetchKey unavailable: \($0)", file: file, line: line) }.get()
    }

    /// commitAssertion's outcome (an unavailable store fails the check).
    public func commitOutcome(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                              file: StaticString = #filePath, line: UInt = #line) throws -> StoreOutcome<CommittedAssertion> {
        try wait("commitAssertion", { store.commitAssertion(keyId: keyId, challenge: challenge, counter: counter, window: window,
                                                            now: now, completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "commitAssertion unavailable: \($0)", file: file, line: line) }.get()
    }

    /// `commitAssertion(…issuing:)`'s answer (an unavailable store fails the check).
    public func commitIssuing(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32, window: Int = 0, now: UnixMillis,
                              next: NextChallenge, file: StaticString = #filePath, line: UInt = #line) throws -> AssertionCommit {
        try wait("commitAssertion(issuing:)", { store.commitAssertion(keyId: keyId, challenge: challenge, counter: counter,
                                                                      window: window, now: now, issuing: next, completion: $0) },
                 file: file, line: line)
            .mapError { ConformanceFailure(message: "commitAssertion(issuing:) unavailable: \($0)", file: file, line: line) }.get()
    }

    /// `acquireFleetSlot`'s answer (an unavailable store fails the check).
    public func fleetSlot(_ name: String, limit: Int, window: UnixMillis, now: UnixMillis,
                          file: StaticString = #filePath, line: UInt = #line) throws -> FleetSlot {
        try wait("acquireFleetSlot", { store.acquireFleetSlot(name, limit: limit, windowMillis: window, now: now, completion: $0) },
                 file: file, line: line)
            .mapError { ConformanceFailure(message: "acquireFleetSlot unavailable: \($0)", file: file, line: line) }.get()
    }

    /// Issues a fresh assert challenge and commits `counter`, expecting acceptance.
    public func commit(_ keyId: KeyID, counter: UInt32, window: Int = 0, file: StaticString = #filePath, line: UInt = #line) throws {
        try expectCommit(keyId, try issueAssert(keyId), counter: counter, window: window, now: baseNow, accepted: true, file: file, line: line)
    }

    /// commitAssertion, expecting a refusal.
    public func expectCommit(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32, window: Int = 0, now: UnixMillis,
                             refused: StoreRefusal, file: StaticString = #filePath, line: UInt = #line) throws {
        try expectCommit(keyId, challenge, counter: counter, window: window, now: now, accepted: false, refusedAs: refused,
                         file: file, line: line)
    }

    /// commitAssertion, expecting acceptance (or, when `accepted` is false, the refusal `refusedAs`).
    public func expectCommit(_ keyId: KeyID, _ challenge: Challenge, counter: UInt32, window: Int = 0, now: UnixMillis,
                             accepted: Bool, refusedAs: StoreRefusal? = nil, context: String = "",
                             file: StaticString = #filePath, line: UInt = #line) throws {
        let outcome = try commitOutcome(keyId, challenge, counter: counter, window: window, now: now, file: file, line: line)
        if accepted {
            try expect(outcome.value != nil, "commit counter \(counter) W \(window): expected accepted, got \(outcome) \(context)",
                       file: file, line: line)
        } else {
            try expect(outcome.value == nil && (refusedAs == nil || outcome.refusal == refusedAs),
                       "commit counter \(counter) W \(window): expected \(refusedAs?.code ?? "a refusal"), got \(outcome) \(context)",
                       file: file, line: line)
        }
    }

    /// Starts `count` operations from concurrent threads without waiting between them, then collects all
    /// outcomes (an unavailable store fails the check).
    public func race<V: Sendable>(count: Int, _ start: @Sendable (Int, @escaping @Sendable (Result<StoreOutcome<V>, StoreUnavailable>) -> Void) -> Void,
                                  file: StaticString = #filePath, line: UInt = #line) throws -> [StoreOutcome<V>] {
        let boxes = (0..<count).map { _ in CompletionBox<Result<StoreOutcome<V>, StoreUnavailable>>() }
        DispatchQueue.concurrentPerform(iterations: count) { i in start(i) { boxes[i].put($0) } }
        return try boxes.enumerated().map { i, box in
            guard let result = box.take(timeout: hangGuard) else {
                throw ConformanceFailure(message: "raced operation \(i): no completion within \(hangGuard) s", file: file, line: line)
            }
            return try result.mapError { ConformanceFailure(message: "raced operation \(i) unavailable: \($0)", file: file, line: line) }.get()
        }
    }

    /// Throws a `ConformanceFailure` unless `condition` holds.
    public func expect(_ condition: @autoclosure () throws -> Bool, _ message: @autoclosure () -> String,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        guard try condition() else { throw ConformanceFailure(message: message(), file: file, line: line) }
    }

    private func failure(_ message: String, file: StaticString = #filePath, line: UInt = #line) -> ConformanceFailure {
        ConformanceFailure(message: message, file: file, line: line)
    }
}

/// Holds the value a completion delivers and counts how often it was called.
public final class CompletionBox<T: Sendable>: @unchecked Sendable {  // `value` and `count` guarded by `condition`
    private let condition = NSCondition()
    private var value: T?
    private var count = 0

    /// Creates an empty box.
    public init() {}

    /// Stores the delivered value (the first one wins) and counts the call.
    public func put(_ newValue: T) {
        condition.lock()
        count += 1
        if value == nil { value = newValue }
        condition.broadcast()
        condition.unlock()
    }

    /// Waits up to `timeout` seconds for a value.
    public func take(timeout: Double) -> T? {
        condition.lock(); defer { condition.unlock() }
        let deadline = Date().addingTimeInterval(timeout)
        while value == nil { if !condition.wait(until: deadline) { break } }
        return value
    }

    /// How many times `put` was called.
    public var calls: Int { condition.lock(); defer { condition.unlock() }; return count }
}

/// A small seeded generator (SplitMix64) so randomised checks are reproducible.
public struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    /// Seeds the generator.
    public init(seed: UInt64) { state = seed }
    /// Next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
