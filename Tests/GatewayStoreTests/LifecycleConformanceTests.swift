import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// The key lifecycle conformance checks (`StoreConformance+Lifecycle`: renew, forget, account index)
/// against `MemoryStore` and against `RedisStore` on a real redis-server, one test per check and store.
final class LifecycleConformanceTests: XCTestCase {
    private var redis: RedisStore?

    override func tearDown() {
        redis?.close()
        redis = nil
        super.tearDown()
    }

    private func memory() -> StoreConformance { StoreConformance(store: MemoryStore()) }

    private func onRedis() throws -> StoreConformance {
        let server = try SharedRedis.server()
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: server.url))
        configuration.connections = 2
        let store = try RedisStore(configuration: configuration)
        redis = store
        return StoreConformance(store: store)
    }

    private func both(_ check: (StoreConformance) throws -> Void) throws {
        try check(memory())
        try check(onRedis())
    }

    func test_renewExtendsExpiryAndSpendsChallenge() throws { try both { try $0.renewExtendsExpiryAndSpendsChallenge() } }
    func test_renewRefusalsChangeNothing() throws { try both { try $0.renewRefusalsChangeNothing() } }
    func test_renewCounterAdvancesLikeAnAssertion() throws { try both { try $0.renewCounterAdvancesLikeAnAssertion() } }
    func test_forgetDeletesAndForgottenKeyCannotRenew() throws { try both { try $0.forgetDeletesAndForgottenKeyCannotRenew() } }
    func test_forgetRefusalsChangeNothing() throws { try both { try $0.forgetRefusalsChangeNothing() } }
    func test_raceSameRenewalAcceptedOnce() throws { try both { try $0.raceSameRenewalAcceptedOnce() } }
    func test_accountHashRoundTripAndReported() throws { try both { try $0.accountHashRoundTripAndReported() } }
    func test_accountIndexRevokesOldestBeyondLimit() throws { try both { try $0.accountIndexRevokesOldestBeyondLimit() } }
    func test_accountIndexDropsExpiredAndRemoved() throws { try both { try $0.accountIndexDropsExpiredAndRemoved() } }
    func test_raceAccountIndexKeepsTheLimit() throws { try both { try $0.raceAccountIndexKeepsTheLimit() } }

    /// Fails when a lifecycle check has no test method here.
    func testCoversEveryLifecycleCheck() {
        let covered: Set<String> = ["renewExtendsExpiryAndSpendsChallenge", "renewRefusalsChangeNothing", "renewCounterAdvancesLikeAnAssertion",
                                    "forgetDeletesAndForgottenKeyCannotRenew", "forgetRefusalsChangeNothing", "raceSameRenewalAcceptedOnce",
                                    "accountHashRoundTripAndReported", "accountIndexRevokesOldestBeyondLimit", "accountIndexDropsExpiredAndRemoved",
                                    "raceAccountIndexKeepsTheLimit"]
        XCTAssertEqual(Set(StoreConformance.lifecycleChecks.map(\.name)), covered)
    }

    /// The account index of a key lives under the account's own hash tag, never the key's: in Redis
    /// Cluster each lifecycle script touches one slot.
    func testAccountIndexUnderItsOwnHashTag() throws {
        let suite = try onRedis()
        let account = try suite.randomAccount()
        let keyId = try suite.randomKeyId()
        _ = try suite.index(account, keyId, createdAt: suite.baseNow, limit: 3)
        let server = try SharedRedis.server()
        let names = try ChildProcess.run("redis-cli", ["-u", server.url, "--scan", "--pattern", "aa:{acct:\(account)}:*"]).output
        XCTAssertEqual(Set(names.split(separator: "\n").map(String.init)), ["aa:{acct:\(account)}:keys"],
                       "the sorted set; the expiry hash is absent while no entry has an expiry")
        _ = try suite.index(account, try suite.randomKeyId(), createdAt: suite.baseNow + 1, expiresAt: suite.baseNow + 900_000, limit: 3)
        let after = try ChildProcess.run("redis-cli", ["-u", server.url, "--scan", "--pattern", "aa:{acct:\(account)}:*"]).output
        XCTAssertEqual(Set(after.split(separator: "\n").map(String.init)), ["aa:{acct:\(account)}:keys", "aa:{acct:\(account)}:exp"])
    }
}
