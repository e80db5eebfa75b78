import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// The device-key (`StoreConformance.deviceKeyChecks`) and key lifecycle
/// (`StoreConformance.lifecycleChecks`) conformance checks against `RedisStore` on the real local
/// Redis Cluster (`SharedRedisCluster`): every script of those flows touches one slot (the key's, or
/// the account's for the account index), so each must run unchanged on a cluster.
final class RedisClusterKeyLifeConformanceTests: XCTestCase {
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

    func test_deviceKeyRoundTrip() throws { try suite().deviceKeyRoundTrip() }
    func test_deviceRegistrationRefusalsChangeNothing() throws { try suite().deviceRegistrationRefusalsChangeNothing() }
    func test_signedRequestCommitsOnceAndRefusalsChangeNothing() throws { try suite().signedRequestCommitsOnceAndRefusalsChangeNothing() }
    func test_signedRequestRaceAcceptedOnce() throws { try suite().signedRequestRaceAcceptedOnce() }
    func test_registrationBackoffDoublesAndClears() throws { try suite().registrationBackoffDoublesAndClears() }
    func test_legacyTierReadsAsAttested() throws { try suite().legacyTierReadsAsAttested() }
    func test_expiredDeviceRegistrationIsReplaced() throws { try suite().expiredDeviceRegistrationIsReplaced() }
    func test_vouchingKeyStoredOnceNeverReplaced() throws { try suite().vouchingKeyStoredOnceNeverReplaced() }

    func test_renewExtendsExpiryAndSpendsChallenge() throws { try suite().renewExtendsExpiryAndSpendsChallenge() }
    func test_renewRefusalsChangeNothing() throws { try suite().renewRefusalsChangeNothing() }
    func test_renewCounterAdvancesLikeAnAssertion() throws { try suite().renewCounterAdvancesLikeAnAssertion() }
    func test_forgetDeletesAndForgottenKeyCannotRenew() throws { try suite().forgetDeletesAndForgottenKeyCannotRenew() }
    func test_forgetRefusalsChangeNothing() throws { try suite().forgetRefusalsChangeNothing() }
    func test_raceSameRenewalAcceptedOnce() throws { try suite().raceSameRenewalAcceptedOnce() }
    func test_accountHashRoundTripAndReported() throws { try suite().accountHashRoundTripAndReported() }
    func test_accountIndexRevokesOldestBeyondLimit() throws { try suite().accountIndexRevokesOldestBeyondLimit() }
    func test_accountIndexDropsExpiredAndRemoved() throws { try suite().accountIndexDropsExpiredAndRemoved() }
    func test_raceAccountIndexKeepsTheLimit() throws { try suite().raceAccountIndexKeepsTheLimit() }

    /// Fails when a device-key or lifecycle check has no test method here.
    func testCoversEveryDeviceKeyAndLifecycleCheck() {
        let covered: Set<String> = ["deviceKeyRoundTrip", "deviceRegistrationRefusalsChangeNothing",
                                    "signedRequestCommitsOnceAndRefusalsChangeNothing", "signedRequestRaceAcceptedOnce",
                                    "registrationBackoffDoublesAndClears", "legacyTierReadsAsAttested",
                                    "expiredDeviceRegistrationIsReplaced", "vouchingKeyStoredOnceNeverReplaced", "renewExtendsExpiryAndSpendsChallenge", "renewRefusalsChangeNothing", "renewCounterAdvancesLikeAnAssertion",
                                    "forgetDeletesAndForgottenKeyCannotRenew", "forgetRefusalsChangeNothing", "raceSameRenewalAcceptedOnce",
                                    "accountHashRoundTripAndReported", "accountIndexRevokesOldestBeyondLimit",
                                    "accountIndexDropsExpiredAndRemoved", "raceAccountIndexKeepsTheLimit"]
        XCTAssertEqual(Set(StoreConformance.deviceKeyChecks.map(\.name) + StoreConformance.lifecycleChecks.map(\.name)), covered)
    }
}
