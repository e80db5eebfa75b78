import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// The shared conformance suite against `RedisStore` on a real redis-server (one server for the class,
/// a fresh store per test, pool of two pipelined connections so raced commits travel on both).
final class RedisStoreConformanceTests: XCTestCase {
    private var store: RedisStore?

    private func suite() throws -> StoreConformance {
        let server = try SharedRedis.server()
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: server.url))
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

    /// Two stores (two gateways) on one redis-server share a fleet counter: the limit is the
    /// fleet's, not each process's. Failing variant: a second name is not limited by the first.
    func testFleetCounterIsSharedByTwoStores() throws {
        let server = try SharedRedis.server()
        let first = try RedisStore(configuration: RedisStore.Configuration(url: try RedisURL(parsing: server.url)))
        let second = try RedisStore(configuration: RedisStore.Configuration(url: try RedisURL(parsing: server.url)))
        defer { first.close(); second.close() }
        let a = StoreConformance(store: first), b = StoreConformance(store: second)
        let name = "shared" + String(UInt32.random(in: 0...UInt32.max))
        let now: UnixMillis = 1_750_000_040_000  // 40 s before its window ends
        XCTAssertEqual(try a.fleetSlot(name, limit: 2, window: 60_000, now: now), .granted)
        XCTAssertEqual(try b.fleetSlot(name, limit: 2, window: 60_000, now: now), .granted)
        XCTAssertEqual(try a.fleetSlot(name, limit: 2, window: 60_000, now: now), .refused(retryAfterMillis: 40_000))
        XCTAssertEqual(try b.fleetSlot(name, limit: 2, window: 60_000, now: now + 1), .refused(retryAfterMillis: 39_999))
        XCTAssertEqual(try b.fleetSlot(name + "x", limit: 2, window: 60_000, now: now), .granted)
        // The counter expires after two windows (Redis TTL), so idle windows leave nothing behind.
        let ttl = try server.cli("PTTL", "aa:{fleet}:\(name):\(now / 60_000)")
        XCTAssertTrue((60_001...120_000).contains(Int(ttl) ?? 0), "TTL two windows, got \(ttl)")
    }
}
