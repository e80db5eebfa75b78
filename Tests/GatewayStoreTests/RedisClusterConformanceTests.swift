import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// The shared conformance suite against `RedisStore` on a real local Redis Cluster of three primaries
/// and three replicas (`SharedRedisCluster`, one per test process), a fresh store per test with two
/// event loops (each with its own connection per node), so raced commits travel on both.
final class RedisClusterConformanceTests: XCTestCase {
    private var store: RedisStore?

    private func suite() throws -> StoreConformance {
        let cluster = try SharedRedisCluster.cluster()
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: cluster.url))
        configuration.connections = 2
        let store = try RedisStore(configuration: configuration)
        self.store = store
        return StoreConformance(store: store)
    }

    override func tearDown() {
        store?.close()
        store = nil
        super.tearDown()
    }

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
