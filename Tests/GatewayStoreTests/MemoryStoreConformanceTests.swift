import GatewayStore
import GatewayTestSupport
import XCTest

/// The shared conformance suite against the in-process `MemoryStore`.
final class MemoryStoreConformanceTests: XCTestCase {
    private func suite() -> StoreConformance { StoreConformance(store: MemoryStore()) }
    func test_registerAndFetchRoundTrip() throws { try suite().registerAndFetchRoundTrip() }
    func test_fetchUnknownIsNil() throws { try suite().fetchUnknownIsNil() }
    func test_registerRefusalsChangeNothing() throws { try suite().registerRefusalsChangeNothing() }
    func test_reRegistrationRefusedWithoutTouchingCounter() throws { try suite().reRegistrationRefusedWithoutTouchingCounter() }
    func test_challengeConsumedExactlyOnce() throws { try suite().challengeConsumedExactlyOnce() }
    func test_commitRefusalsChangeNothing() throws { try suite().commitRefusalsChangeNothing() }
    func test_commitReturnsStoredFields() throws { try suite().commitReturnsStoredFields() }
    func test_wrongChallengeDoesNotBurnPending() throws { try suite().wrongChallengeDoesNotBurnPending() }
    func test_challengeBoundToKeyAndPurpose() throws { try suite().challengeBoundToKeyAndPurpose() }
    func test_challengeExpiryUsesInjectedNow() throws { try suite().challengeExpiryUsesInjectedNow() }
    func test_counterStrictlyIncreasing() throws { try suite().counterStrictlyIncreasing() }
    func test_windowOutOfOrderOnceAndTooOldRefused() throws { try suite().windowOutOfOrderOnceAndTooOldRefused() }
    func test_windowMatchesReferenceModel() throws { try suite().windowMatchesReferenceModel() }
    func test_storedWindowMatchesReplayWindow() throws { try suite().storedWindowMatchesReplayWindow() }
    func test_revokedKeyRefused() throws { try suite().revokedKeyRefused() }
    func test_deletedKeyUnknown() throws { try suite().deletedKeyUnknown() }
    func test_expiredRegistrationRefused() throws { try suite().expiredRegistrationRefused() }
    func test_raceSameCommitAcceptedOnce() throws { try suite().raceSameCommitAcceptedOnce() }
    func test_raceSameCounterDistinctChallengesAcceptedOnce() throws { try suite().raceSameCounterDistinctChallengesAcceptedOnce() }
    func test_raceOutOfOrderWindowEachOnce() throws { try suite().raceOutOfOrderWindowEachOnce() }
    func test_binaryKeyIdsAndChallenges() throws { try suite().binaryKeyIdsAndChallenges() }
    func test_reissueReplacesPurposeAndExpiry() throws { try suite().reissueReplacesPurposeAndExpiry() }
    func test_pingSucceeds() throws { try suite().pingSucceeds() }
    func test_nextChallengeIssuedByCommit() throws { try suite().nextChallengeIssuedByCommit() }
    func test_nextChallengeFollowsTheKey() throws { try suite().nextChallengeFollowsTheKey() }
    func test_fleetSlotsPerWindow() throws { try suite().fleetSlotsPerWindow() }
    func test_closedStoreAnswersUnavailable() throws { try suite().closedStoreAnswersUnavailable() }

    /// Fails when a check of `StoreConformance.checks` has no test method here.
    func testCoversEveryConformanceCheck() {
        let covered: Set<String> = ["registerAndFetchRoundTrip", "fetchUnknownIsNil", "registerRefusalsChangeNothing", "reRegistrationRefusedWithoutTouchingCounter", "challengeConsumedExactlyOnce", "commitRefusalsChangeNothing", "commitReturnsStoredFields", "wrongChallengeDoesNotBurnPending", "challengeBoundToKeyAndPurpose", "challengeExpiryUsesInjectedNow", "counterStrictlyIncreasing", "windowOutOfOrderOnceAndTooOldRefused", "windowMatchesReferenceModel", "storedWindowMatchesReplayWindow", "revokedKeyRefused", "deletedKeyUnknown", "expiredRegistrationRefused", "raceSameCommitAcceptedOnce", "raceSameCounterDistinctChallengesAcceptedOnce", "raceOutOfOrderWindowEachOnce", "binaryKeyIdsAndChallenges", "reissueReplacesPurposeAndExpiry", "pingSucceeds", "nextChallengeIssuedByCommit", "nextChallengeFollowsTheKey", "fleetSlotsPerWindow", "closedStoreAnswersUnavailable"]
        XCTAssertEqual(Set(StoreConformance.checks.map(\.name)), covered)
    }
}

/// The protocol's default `commitAssertion(…issuing:)` (commit, then `issueChallenge`: what a store
/// without a combined command gets) against the same conformance checks, through a wrapper that
/// implements only the plain requirements over a `MemoryStore`.
final class DefaultCommitIssuingConformanceTests: XCTestCase {
    /// Forwards the plain requirements only, so the extension's default serves `issuing:`.
    private final class PlainStore: AttestStore {
        let inner = MemoryStore()
        func issueChallenge(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis,
                            now: UnixMillis, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
            inner.issueChallenge(challenge, keyId: keyId, purpose: purpose, expiresAt: expiresAt, now: now, completion: completion)
        }
        func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                         completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
            inner.registerKey(record, challenge: challenge, now: now, completion: completion)
        }
        func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void) {
            inner.fetchKey(keyId, completion: completion)
        }
        func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                             completion: @escaping @Sendable (Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>) -> Void) {
            inner.commitAssertion(keyId: keyId, challenge: challenge, counter: counter, window: window, now: now,
                                  completion: completion)
        }
        func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
            inner.revokeKey(keyId, completion: completion)
        }
        func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
            inner.deleteKey(keyId, completion: completion)
        }
        func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) { inner.ping(completion: completion) }
        func close() { inner.close() }
    }

    func test_nextChallengeIssuedByCommit() throws { try StoreConformance(store: PlainStore()).nextChallengeIssuedByCommit() }
    func test_nextChallengeFollowsTheKey() throws { try StoreConformance(store: PlainStore()).nextChallengeFollowsTheKey() }

    /// A store without fleet counters fails closed: a configured fleet limit never admits silently.
    func testFleetSlotWithoutCountersIsUnavailable() throws {
        let result = try StoreConformance(store: PlainStore()).wait("acquireFleetSlot") { done in
            PlainStore().acquireFleetSlot("attest", limit: 5, windowMillis: 1_000, now: 0, completion: done)
        } as Result<FleetSlot, StoreUnavailable>
        guard case .failure = result else { return XCTFail("expected a failure, got \(result)") }
        // Failing variant: the memory store has counters.
        XCTAssertEqual(try StoreConformance(store: MemoryStore()).fleetSlot("attest", limit: 5, window: 1_000, now: 0), .granted)
    }
}
