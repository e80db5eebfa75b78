import GatewayStore
import GatewayTestSupport
import XCTest

/// Memory-store specifics: purge of challenges past their grace (lazy and by sweep) on the store's own
/// clock, and its capacity bound.
final class MemoryStoreTests: XCTestCase {
    /// A settable clock for the memory store.
    final class ManualClock: @unchecked Sendable {  // `value` guarded by `lock`
        private let lock = NSLock()
        private var value: UnixMillis = 0
        func now() -> UnixMillis { lock.withLock { value } }
        func advance(_ ms: UnixMillis) { lock.withLock { value += ms } }
    }

    private func makeStore(clock: ManualClock, maximumChallenges: Int = 1_000_000) -> MemoryStore {
        var configuration = MemoryStore.Configuration()
        configuration.challengeGrace = 60_000
        configuration.sweepInterval = 0
        configuration.maximumChallenges = maximumChallenges
        configuration.clock = { clock.now() }
        return MemoryStore(configuration: configuration)
    }

    func testExpiredChallengeAnswersExpiredDuringGraceThenUnknown() throws {
        let clock = ManualClock()
        let suite = StoreConformance(store: makeStore(clock: clock))
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        let challenge = try suite.randomChallenge()
        try suite.issue(challenge, keyId: record.keyId, purpose: .assert, expiresAt: suite.baseNow + 300_000, now: suite.baseNow)
        clock.advance(300_000 + 59_999)  // inside the grace on the store's clock
        try suite.expectCommit(record.keyId, challenge, counter: 1, now: suite.baseNow + 300_000, refused: .challengeExpired)
        clock.advance(1)                 // grace over: purged lazily on access
        try suite.expectCommit(record.keyId, challenge, counter: 1, now: suite.baseNow + 300_000, refused: .challengeUnknown)
        try suite.expectCommit(record.keyId, challenge, counter: 1, now: suite.baseNow, refused: .challengeUnknown)
    }

    func testSweepPurgesOnlyPastGraceAndSkipsConsumed() throws {
        let clock = ManualClock()
        let store = makeStore(clock: clock)
        let suite = StoreConformance(store: store)
        let record = try suite.makeRecord()
        try suite.registerExpectingAccepted(record)
        let short = try (0..<10).map { _ in try suite.randomChallenge() }
        for c in short { try suite.issue(c, keyId: record.keyId, purpose: .assert, expiresAt: suite.baseNow + 1_000, now: suite.baseNow) }
        let long = try suite.randomChallenge()
        try suite.issue(long, keyId: record.keyId, purpose: .assert, expiresAt: suite.baseNow + 600_000, now: suite.baseNow)
        try suite.expectCommit(record.keyId, short[0], counter: 1, now: suite.baseNow, accepted: true)
        XCTAssertEqual(store.challengeCount, 10)
        XCTAssertEqual(store.sweep(), 0)
        clock.advance(61_000)
        XCTAssertEqual(store.sweep(), 9, "the 9 unconsumed short challenges are purged, the consumed one was already gone")
        XCTAssertEqual(store.challengeCount, 1)
        try suite.expectCommit(record.keyId, long, counter: 2, now: suite.baseNow, accepted: true)
        XCTAssertEqual(store.challengeCount, 0)
    }

    func testCapacityBoundFailsAsUnavailableAndRecoversAfterPurge() throws {
        let clock = ManualClock()
        let store = makeStore(clock: clock, maximumChallenges: 3)
        let suite = StoreConformance(store: store)
        let keyId = try suite.randomKeyId()
        for _ in 0..<3 { try suite.issue(try suite.randomChallenge(), keyId: keyId, purpose: .assert, expiresAt: suite.baseNow + 1_000, now: suite.baseNow) }
        let refused = try suite.wait("issue") {
            store.issueChallenge(try suite.randomChallenge(), keyId: keyId, purpose: .assert, expiresAt: suite.baseNow + 1_000,
                                 now: suite.baseNow, completion: $0)
        }
        guard case .failure(let error) = refused else { return XCTFail("expected overloaded, got \(refused)") }
        XCTAssertEqual(error.reason, .overloaded)
        clock.advance(61_000)
        try suite.issue(try suite.randomChallenge(), keyId: keyId, purpose: .assert, expiresAt: suite.baseNow + 1_000, now: suite.baseNow)
        XCTAssertEqual(store.challengeCount, 1)
    }

    func testBackgroundSweepRuns() throws {
        let clock = ManualClock()
        var configuration = MemoryStore.Configuration()
        configuration.sweepInterval = 10
        configuration.challengeGrace = 0
        configuration.clock = { clock.now() }
        let store = MemoryStore(configuration: configuration)
        let suite = StoreConformance(store: store)
        try suite.issue(try suite.randomChallenge(), keyId: try suite.randomKeyId(), purpose: .assert,
                        expiresAt: suite.baseNow + 5, now: suite.baseNow)
        clock.advance(10)
        let deadline = Date().addingTimeInterval(30)
        while store.challengeCount > 0 && Date() < deadline { usleep(5_000) }
        XCTAssertEqual(store.challengeCount, 0, "the timer's sweep purged the challenge")
    }
}
