import XCTest
@testable import GatewayConfig

/// Several endpoints per upstream: `endpoints`, `balance`, `ejection`, `dns_refresh`,
/// `health_check`, and their refusals.
final class UpstreamEndpointsConfigTests: XCTestCase {
    /// `ConfigTestHelpers.minimal()` with upstream `app` written as `upstream` (from line 6 on).
    private func config(_ upstream: String) -> String {
        ConfigTestHelpers.minimal().replacingOccurrences(of: "  app: http://127.0.0.1:8081", with: upstream)
    }

    func testEndpointsListWithEverySetting() throws {
        let loaded = try XCTUnwrap(loadOK(config("""
          app:
            endpoints: [http://10.0.0.1:8080, http://api.internal:8080, "http://[::1]:8080"]
            balance: least_request
            ejection: {consecutive_errors: 3, base_time: 2s, max_time: 1m}
            dns_refresh: 10s
            health_check: {path: /health/ready, interval: 3s, timeout: 500ms, healthy_threshold: 1, unhealthy_threshold: 4}
        """)))
        let u = try XCTUnwrap(loaded.configuration.upstream(named: "app"))
        XCTAssertEqual(u.endpoints, [.http(host: "10.0.0.1", port: 8080), .http(host: "api.internal", port: 8080), .http(host: "::1", port: 8080)])
        XCTAssertEqual(u.endpoint, .http(host: "10.0.0.1", port: 8080))
        XCTAssertEqual(u.balance, .leastRequest)
        XCTAssertEqual(u.ejection, UpstreamConfiguration.Ejection(consecutiveErrors: 3, baseTime: .seconds(2), maxTime: .seconds(60)))
        XCTAssertEqual(u.dnsRefresh, .seconds(10))
        XCTAssertEqual(u.healthCheck, UpstreamConfiguration.HealthCheck(path: "/health/ready", interval: .seconds(3), timeout: .milliseconds(500),
                                                                         healthyThreshold: 1, unhealthyThreshold: 4))
        XCTAssertEqual(u.hostNames, ["api.internal"])
        XCTAssertEqual(loaded.warnings.map(\.path), ["store"])
    }

    func testURLAloneKeepsWorkingWithDefaults() throws {
        let u = try XCTUnwrap(loadOK(config("  app: {url: http://127.0.0.1:8081}"))?.configuration.upstream(named: "app"))
        XCTAssertEqual(u.endpoints, [.http(host: "127.0.0.1", port: 8081)])
        XCTAssertEqual(u.balance, .roundRobin)
        XCTAssertEqual(u.ejection, UpstreamConfiguration.Ejection())
        XCTAssertEqual(u.dnsRefresh, .seconds(30))
        XCTAssertNil(u.healthCheck)
        let short = try XCTUnwrap(loadOK(config("  app: http://127.0.0.1:8081"))?.configuration.upstream(named: "app"))
        XCTAssertEqual(short, u)
    }

    func testSingleEndpointSettingsWarn() throws {
        let loaded = try XCTUnwrap(loadOK(config("  app: {url: http://127.0.0.1:8081, balance: least_request, dns_refresh: 5s}")))
        XCTAssertEqual(loaded.warnings.map(\.path), ["store", "upstreams.app.balance", "upstreams.app.dns_refresh"])
    }

    func testRefusals() {
        XCTAssertEqual(errorLines(config("  app: {url: http://a:1, endpoints: [http://b:1]}")),
                       ["upstreams.app.endpoints: write either url or endpoints, not both (endpoints: [URL, ...] lists every endpoint) (line 6, column 37)"])
        XCTAssertEqual(errorLines(config("  app: {balance: round_robin}")),
                       ["upstreams.app.url: required key is missing (http://host:port, https://host:port or unix:/path; or endpoints: [URL, ...]) (line 6, column 8)"])
        XCTAssertEqual(errorLines(config("  app: {endpoints: []}")), ["upstreams.app.endpoints: expected 1 to 64 endpoints, got 0 (line 6, column 20)"])
        XCTAssertEqual(errorLines(config("  app: {endpoints: [http://a:1, https://b:1]}")),
                       ["upstreams.app.endpoints[1]: every endpoint of an upstream uses one scheme: https://b:1 is not http:// (line 6, column 33)"])
        XCTAssertEqual(errorLines(config("  app: {endpoints: [http://a:1, http://A:1]}")),
                       ["upstreams.app.endpoints[1]: http://a:1 is listed twice (line 6, column 33)"])
        XCTAssertEqual(errorLines(config("  app: {endpoints: [http://a:1, ftp://b]}")).count, 1)
        XCTAssertEqual(errorLines(config("  app: {endpoints: [http://a:1, http://b:1], balance: random}")),
                       ["upstreams.app.balance: expected one of round_robin | least_request, got \"random\" (line 6, column 55)"])
        XCTAssertEqual(errorLines(config("  app: {endpoints: [http://a:1, http://b:1], ejection: {base_time: 1m, max_time: 10s}}")),
                       ["upstreams.app.ejection.max_time: must be at least base_time (1m) (line 6, column 82)"])
        XCTAssertEqual(errorLines(config("  app: {endpoints: [http://a:1, http://b:1], ejection: {consecutive: 3}}")).first?.hasPrefix("upstreams.app.ejection.consecutive: unknown key"), true)
        XCTAssertEqual(errorLines(config("  app: {url: http://a:1, health_check: {interval: 1s, timeout: 2s}}")),
                       ["upstreams.app.health_check.timeout: must not exceed interval (1s) (line 6, column 64)"])
        XCTAssertEqual(errorLines(config("  app: {url: http://a:1, health_check: {path: healthz}}")).count, 1)
        XCTAssertEqual(errorLines(config("  app: {url: http://a:1, dns_refresh: 500ms}")),
                       ["upstreams.app.dns_refresh: expected 0 (resolve only while unresolved) or 1s to 1h, got 500ms (line 6, column 39)"])
        XCTAssertEqual(errorLines(config("  app: {endpoints: [http://a:1, http://127.0.0.1:8080]}")),
                       ["upstreams.app: http://127.0.0.1:8080 is the gateway's own listener listen[0] (127.0.0.1:8080): requests would loop (line 6, column 8)"])
    }

    func testRouteTimeoutsOverrideTheUpstreams() throws {
        let yaml = ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /slow
            upstream: app
            connect_timeout: 250ms
            response_timeout: 2m
          - path_prefix: /
            upstream: app
        """)
        let routes = try XCTUnwrap(loadOK(yaml)).configuration.routes
        XCTAssertEqual(routes.map(\.connectTimeout), [.milliseconds(250), nil])
        XCTAssertEqual(routes.map(\.responseTimeout), [.seconds(120), nil])
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /
            upstream: app
            connect_timeout: 2m
            response_timeout: 0
        """)), ["routes[0].connect_timeout: must be from 1ms to 1m, got 2m (line 10, column 22)",
                   "routes[0].response_timeout: must be from 1ms to 1h, got 0 (line 11, column 23)"])
    }
}
