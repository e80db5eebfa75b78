import XCTest
@testable import GatewayConfig

/// `endpoints.rate_limit`: absent by default, both keys validated with their paths.
final class RateLimitConfigTests: XCTestCase {
    func testAbsentByDefault() {
        XCTAssertNil(loadOK(ConfigTestHelpers.minimal())?.configuration.endpoints.rateLimit)
    }

    func testRateAndDefaultBurst() {
        let loaded = loadOK(ConfigTestHelpers.minimal(extra: """
        endpoints:
          rate_limit:
            requests_per_second: 5
        """))
        XCTAssertEqual(loaded?.configuration.endpoints.rateLimit, EndpointsConfiguration.RateLimit(requestsPerSecond: 5, burst: 10))
        let explicit = loadOK(ConfigTestHelpers.minimal(extra: """
        endpoints:
          rate_limit: {requests_per_second: 5, burst: 1}
        """))
        XCTAssertEqual(explicit?.configuration.endpoints.rateLimit?.burst, 1)
    }

    func testInvalidValuesNameTheirPath() {
        let lines = errorLines(ConfigTestHelpers.minimal(extra: """
        endpoints:
          rate_limit:
            requests_per_second: 0
            burst: many
            per_ip: true
        """))
        XCTAssertTrue(lines.contains { $0.hasPrefix("endpoints.rate_limit.requests_per_second: must be from 1 to 100000, got 0") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("endpoints.rate_limit.burst: expected an integer from 1 to 1000000") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("endpoints.rate_limit.per_ip: unknown key") }, "\(lines)")
        let missing = errorLines(ConfigTestHelpers.minimal(extra: """
        endpoints:
          rate_limit: {burst: 3}
        """))
        XCTAssertTrue(missing.contains { $0.hasPrefix("endpoints.rate_limit.requests_per_second: required key is missing") }, "\(missing)")
    }
}
