import Foundation
import XCTest
@testable import GatewayConfig

/// `apps[].risk`, the routes' `max_risk_metric` / `risk_action`, `trust.extra_receipt_roots` and
/// `headers.injected.risk_age` (issue 12): values as written, errors with their key paths.
final class RiskConfigTests: XCTestCase {
    private var folder: URL!

    override func setUpWithError() throws {
        folder = try ConfigTestHelpers.temporaryFolder()
        try "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"
            .write(to: folder.appendingPathComponent("AuthKey.p8"), atomically: true, encoding: .utf8)
        try "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
            .write(to: folder.appendingPathComponent("ca.pem"), atomically: true, encoding: .utf8)
        try "not a key".write(to: folder.appendingPathComponent("notakey.p8"), atomically: true, encoding: .utf8)
    }

    private func yaml(risk: String, route: String = "", extra: String = "") -> String {
        """
        listen: 127.0.0.1:8080
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
            risk:
        \(risk.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))
        upstreams:
          app: http://127.0.0.1:8081
        routes:
          - path_prefix: /
            upstream: app
        \(route.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        \(extra)
        """
    }

    func testValidSettingsAndDefaults() throws {
        let loaded = loadOK(yaml(risk: """
            team_id: ABCDE12345
            key_id: KEYID98765
            private_key_file: AuthKey.p8
            """, route: "max_risk_metric: 5"), base: folder.path)
        let risk = try XCTUnwrap(loaded?.configuration.apps.first?.risk)
        XCTAssertEqual(risk.teamID, "ABCDE12345")
        XCTAssertEqual(risk.keyID, "KEYID98765")
        XCTAssertEqual(risk.privateKeyFile, folder.appendingPathComponent("AuthKey.p8").path, "relative to the file's folder")
        XCTAssertEqual(risk.dataServer, .production)
        XCTAssertEqual(risk.dataServer.host, "data.appattest.apple.com")
        XCTAssertEqual(risk.maxCallsPerSecond, 5)
        XCTAssertEqual(loaded?.configuration.routes.first?.riskPolicy, RouteRiskPolicy(maxMetric: 5, action: .monitor))
        XCTAssertNil(loadOK(ConfigTestHelpers.minimal())?.configuration.apps.first?.risk, "absent: no refreshes")

        let custom = loadOK(yaml(risk: """
            team_id: ABCDE12345
            key_id: KEYID98765
            private_key_file: AuthKey.p8
            data_server: https://127.0.0.1:9443
            data_server_ca: ca.pem
            max_calls_per_second: 20
            """, route: "max_risk_metric: 0\nrisk_action: deny", extra: "trust:\n  extra_receipt_roots: [ca.pem]"), base: folder.path)
        let c = try XCTUnwrap(custom?.configuration.apps.first?.risk)
        XCTAssertEqual(c.dataServer, .url(host: "127.0.0.1", port: 9443, ca: folder.appendingPathComponent("ca.pem").path))
        XCTAssertEqual(c.maxCallsPerSecond, 20)
        XCTAssertEqual(custom?.configuration.routes.first?.riskPolicy, RouteRiskPolicy(maxMetric: 0, action: .deny))
        XCTAssertEqual(custom?.configuration.trust.extraReceiptRoots, [folder.appendingPathComponent("ca.pem").path])
        XCTAssertTrue(custom?.warnings.contains { $0.path == "apps[0].risk.data_server" } ?? false, "a stand-in server is for tests")
        XCTAssertTrue(custom?.warnings.contains { $0.path == "trust.extra_receipt_roots[0]" } ?? false)
        XCTAssertEqual(loadOK(yaml(risk: "team_id: ABCDE12345\nkey_id: KEYID98765\nprivate_key_file: AuthKey.p8\ndata_server: development"),
                              base: folder.path)?.configuration.apps.first?.risk?.dataServer.host, "data-development.appattest.apple.com")
    }

    func testErrorsNameTheirPaths() {
        let lines = errorLines(yaml(risk: """
            team_id: abcde
            key_id: KEYID98765
            private_key_file: notakey.p8
            data_server: http://127.0.0.1:80
            max_calls_per_second: 0
            secret: x
            """, route: "risk_action: deny"), base: folder.path)
        XCTAssertTrue(lines.contains { $0.hasPrefix("apps[0].risk.team_id: expected the team ID of the DeviceCheck key") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("apps[0].risk.private_key_file: ") && $0.contains("not a PKCS#8 PEM private key") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("apps[0].risk.data_server: expected production, development or https://host:port") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("apps[0].risk.max_calls_per_second: ") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("apps[0].risk.secret: unknown key") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("routes[0].risk_action: has no effect without max_risk_metric") }, "\(lines)")

        let missing = errorLines(yaml(risk: "team_id: ABCDE12345", route: "max_risk_metric: -1"), base: folder.path)
        XCTAssertTrue(missing.contains { $0.hasPrefix("apps[0].risk.key_id: required key is missing") }, "\(missing)")
        XCTAssertTrue(missing.contains { $0.hasPrefix("apps[0].risk.private_key_file: required key is missing") }, "\(missing)")
        XCTAssertTrue(missing.contains { $0.hasPrefix("routes[0].max_risk_metric: ") }, "\(missing)")

        let caWithoutURL = errorLines(yaml(risk: "team_id: ABCDE12345\nkey_id: KEYID98765\nprivate_key_file: AuthKey.p8\ndata_server_ca: ca.pem"),
                                      base: folder.path)
        XCTAssertTrue(caWithoutURL.contains { $0.hasPrefix("apps[0].risk.data_server_ca: only used with a data_server URL") }, "\(caWithoutURL)")
        let absentFile = errorLines(yaml(risk: "team_id: ABCDE12345\nkey_id: KEYID98765\nprivate_key_file: gone.p8"), base: folder.path)
        XCTAssertTrue(absentFile.contains { $0.hasPrefix("apps[0].risk.private_key_file: cannot read") }, "\(absentFile)")
        let roots = errorLines(ConfigTestHelpers.minimal(extra: "trust:\n  extra_receipt_roots: [gone.pem]"), base: folder.path)
        XCTAssertTrue(roots.contains { $0.hasPrefix("trust.extra_receipt_roots[0]: cannot read a PEM certificate") }, "\(roots)")
    }

    func testRiskAgeHeaderNameFollowsThePrefixRule() {
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal())?.configuration.headers.injected.riskAge, "App-Attest-Risk-Age")
        let renamed = loadOK(ConfigTestHelpers.minimal(extra: "headers:\n  injected:\n    risk_age: App-Attest-Metric-Age"))
        XCTAssertEqual(renamed?.configuration.headers.injected.riskAge, "App-Attest-Metric-Age")
        let outside = errorLines(ConfigTestHelpers.minimal(extra: "headers:\n  injected:\n    risk_age: X-Risk-Age"))
        XCTAssertFalse(outside.isEmpty)
    }
}
