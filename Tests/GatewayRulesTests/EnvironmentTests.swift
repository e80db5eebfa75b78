import GatewayRules
import XCTest

/// The one environment type and the one environment policy (names, stored and configured forms).
final class EnvironmentTests: XCTestCase {
    func testNamesAreTheStoredConfiguredAndHeaderForms() {
        XCTAssertEqual(AppAttestEnvironment.allCases.map(\.rawValue), ["production", "development"])
        XCTAssertEqual(AppAttestEnvironment(rawValue: "development"), .development)
        XCTAssertNil(AppAttestEnvironment(rawValue: "sandbox"))
        XCTAssertNil(AppAttestEnvironment(rawValue: "Production"))
        XCTAssertEqual(EnvironmentPolicy.allCases.map(\.rawValue), ["production", "development", "any"])
        XCTAssertNil(EnvironmentPolicy(rawValue: "both"))
    }

    func testPolicyAllows() {
        XCTAssertTrue(EnvironmentPolicy.production.allows(.production))
        XCTAssertFalse(EnvironmentPolicy.production.allows(.development))
        XCTAssertTrue(EnvironmentPolicy.development.allows(.development))
        XCTAssertFalse(EnvironmentPolicy.development.allows(.production))
        XCTAssertTrue(EnvironmentPolicy.any.allows(.production))
        XCTAssertTrue(EnvironmentPolicy.any.allows(.development))
    }
}
