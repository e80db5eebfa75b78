import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// The device-key conformance checks (`StoreConformance.deviceKeyChecks`) against the memory store.
final class MemoryStoreDeviceKeyConformanceTests: XCTestCase {
    private func suite() -> StoreConformance { StoreConformance(store: MemoryStore()) }
    func test_deviceKeyRoundTrip() throws { try suite().deviceKeyRoundTrip() }
    func test_deviceRegistrationRefusalsChangeNothing() throws { try suite().deviceRegistrationRefusalsChangeNothing() }
    func test_signedRequestCommitsOnceAndRefusalsChangeNothing() throws { try suite().signedRequestCommitsOnceAndRefusalsChangeNothing() }
    func test_signedRequestRaceAcceptedOnce() throws { try suite().signedRequestRaceAcceptedOnce() }
    func test_registrationBackoffDoublesAndClears() throws { try suite().registrationBackoffDoublesAndClears() }
    func test_legacyTierReadsAsAttested() throws { try suite().legacyTierReadsAsAttested() }
    func test_expiredDeviceRegistrationIsReplaced() throws { try suite().expiredDeviceRegistrationIsReplaced() }
    func test_vouchingKeyStoredOnceNeverReplaced() throws { try suite().vouchingKeyStoredOnceNeverReplaced() }

    /// Fails when a device-key check has no test method here.
    func testCoversEveryDeviceKeyCheck() {
        XCTAssertEqual(Set(StoreConformance.deviceKeyChecks.map(\.name)),
                       ["deviceKeyRoundTrip", "deviceRegistrationRefusalsChangeNothing", "signedRequestCommitsOnceAndRefusalsChangeNothing",
                        "signedRequestRaceAcceptedOnce", "registrationBackoffDoublesAndClears", "legacyTierReadsAsAttested",
                        "expiredDeviceRegistrationIsReplaced", "vouchingKeyStoredOnceNeverReplaced"])
    }
}

/// The device-key conformance checks against `RedisStore` on a real redis-server, plus the Redis
/// layout: every record of the device key under its hash tag.
final class RedisStoreDeviceKeyConformanceTests: XCTestCase {
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

    func test_deviceKeyRoundTrip() throws { try suite().deviceKeyRoundTrip() }
    func test_deviceRegistrationRefusalsChangeNothing() throws { try suite().deviceRegistrationRefusalsChangeNothing() }
    func test_signedRequestCommitsOnceAndRefusalsChangeNothing() throws { try suite().signedRequestCommitsOnceAndRefusalsChangeNothing() }
    func test_signedRequestRaceAcceptedOnce() throws { try suite().signedRequestRaceAcceptedOnce() }
    func test_registrationBackoffDoublesAndClears() throws { try suite().registrationBackoffDoublesAndClears() }
    func test_legacyTierReadsAsAttested() throws { try suite().legacyTierReadsAsAttested() }
    func test_expiredDeviceRegistrationIsReplaced() throws { try suite().expiredDeviceRegistrationIsReplaced() }
    func test_vouchingKeyStoredOnceNeverReplaced() throws { try suite().vouchingKeyStoredOnceNeverReplaced() }

    /// The back-off and the record live under the device key's hash tag; the back-off has a TTL of
    /// the delay plus seven days, the record none; a registration deletes the back-off.
    func testBackoffLivesUnderTheKeysHashTagWithTTL() throws {
        let suite = try suite()
        let server = try SharedRedis.server()
        let record = try suite.makeDeviceRecord()
        _ = try suite.refuseRegistration(record.keyId, now: suite.baseNow)
        let tag = String(decoding: record.keyId.base64URL, as: UTF8.self)
        func cli(_ args: String...) throws -> String {
            try ChildProcess.run("redis-cli", ["-p", String(server.port)] + args).output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        XCTAssertEqual(try cli("HGET", "aa:{\(tag)}:regoff", "n"), "1")
        let ttl = try XCTUnwrap(Int64(try cli("PTTL", "aa:{\(tag)}:regoff")))
        XCTAssertGreaterThan(ttl, 604_800_000, "delay + 7 days")
        XCTAssertLessThanOrEqual(ttl, 3_600_000 + 604_800_000)
        try suite.registerDeviceExpectingAccepted(record)
        XCTAssertEqual(try cli("EXISTS", "aa:{\(tag)}:regoff"), "0", "the registration deleted the back-off")
        XCTAssertEqual(try cli("PTTL", "aa:{\(tag)}:key"), "-1", "key records never expire by TTL")
        XCTAssertEqual(try cli("HGET", "aa:{\(tag)}:key", "bk"), "software")
        XCTAssertEqual(try cli("HGET", "aa:{\(tag)}:key", "pa"), "0")
        XCTAssertEqual(try cli("HGET", "aa:{\(tag)}:key", "tier"), "device")
    }
}
