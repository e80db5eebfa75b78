import AppAttest
import GatewayRules
import XCTest

/// The aaguid of each environment (Apple: attestation step 8), on the one `AppAttestEnvironment` type.
final class EnvironmentAAGUIDTests: XCTestCase {
    func testAAGUIDs() {
        XCTAssertEqual(AppAttestEnvironment.development.aaguid, Array("appattestdevelop".utf8))
        XCTAssertEqual(AppAttestEnvironment.production.aaguid, Array("appattest".utf8) + [0, 0, 0, 0, 0, 0, 0])
        for environment in AppAttestEnvironment.allCases {
            XCTAssertEqual(environment.aaguid.count, 16)
            XCTAssertEqual(AppAttestEnvironment(aaguid: environment.aaguid), environment)
        }
    }

    func testOtherAAGUIDsAreNoEnvironment() {
        XCTAssertNil(AppAttestEnvironment(aaguid: Array("appattestdevelox".utf8)))
        XCTAssertNil(AppAttestEnvironment(aaguid: Array("appattest".utf8) + [0, 0, 0, 0, 0, 0, 1]))
        XCTAssertNil(AppAttestEnvironment(aaguid: Array("appattest".utf8)))
        XCTAssertNil(AppAttestEnvironment(aaguid: []))
    }

    func testAppPolicyTakesTheSharedPolicy() {
        let policy = AppPolicy(appId: "ABCDE12345.com.example.app", environment: .development)
        XCTAssertEqual(policy.environment, EnvironmentPolicy.development)
        XCTAssertTrue(policy.environment.allows(.development))
        XCTAssertFalse(policy.environment.allows(.production))
    }
}
