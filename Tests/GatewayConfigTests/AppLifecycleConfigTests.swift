import Foundation
import GatewayRules
import XCTest
@testable import GatewayConfig

/// The lifecycle keys of `apps[]` (issue 10): `registration_ttl`, `account_header`, `account_key` /
/// `account_key_file` (from `${ENV}` or a file, never printed), `max_keys_per_account`; each accepted
/// form beside the refused ones.
final class AppLifecycleConfigTests: XCTestCase {
    private func config(_ app: String) -> String {
        """
        listen: 127.0.0.1:8080
        apps:
          - app_id: ABCDE12345.com.example.app
        \(app.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n"))
        upstreams:
          app: http://127.0.0.1:8081
        routes:
          - path_prefix: /
            upstream: app
        """
    }

    private func parse(_ app: String, _ environment: [String: String] = [:], base: String = "/tmp") throws(ConfigError) -> AppConfiguration {
        let loaded = try GatewayConfiguration.parse(yaml: config(app), baseDirectory: base, environment: environment)
        return loaded.configuration.apps[0]
    }

    private func errors(_ app: String, _ environment: [String: String] = [:], base: String = "/tmp",
                        file: StaticString = #filePath, line: UInt = #line) -> [String] {
        do {
            _ = try parse(app, environment, base: base)
            XCTFail("expected errors", file: file, line: line)
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    func testDefaultsNoExpiryNoAccounts() throws {
        let app = try parse("environment: production")
        XCTAssertNil(app.registrationTTL)
        XCTAssertNil(app.accountKeys)
    }

    func testRegistrationTTL() throws {
        XCTAssertEqual(try parse("registration_ttl: 720h").registrationTTL, .seconds(720 * 3600))
        XCTAssertEqual(try parse("registration_ttl: 1m").registrationTTL, .seconds(60))
        XCTAssertTrue(errors("registration_ttl: 30s").joined().contains("registration_ttl: must be from 1m"), "\(errors("registration_ttl: 30s"))")
        XCTAssertTrue(errors("registration_ttl: 30d").joined().contains("registration_ttl"), "days are not a unit")
        XCTAssertTrue(errors("registration_ttl: 3600").joined().contains("add a unit"))
    }

    func testAccountKeyFromEnvironment() throws {
        let app = try parse("account_header: X-Account-Id\naccount_key: ${ACCOUNT_KEY}\nmax_keys_per_account: 3",
                            ["ACCOUNT_KEY": "0123456789abcdef0123"])
        XCTAssertEqual(app.accountKeys?.header, "X-Account-Id")
        XCTAssertEqual(app.accountKeys?.hmacKey, Array("0123456789abcdef0123".utf8))
        XCTAssertEqual(app.accountKeys?.maximumKeys, 3)
        XCTAssertFalse(app.accountKeys?.description.contains("0123456789") ?? true, "the key is never printed")
        XCTAssertEqual(try parse("account_header: X-A\naccount_key: 0123456789abcdef").accountKeys?.maximumKeys,
                       AccountKeysConfiguration.defaultMaximumKeys)
    }

    func testAccountKeyFromFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("acct-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try "file-held-account-key-0123\n".write(to: folder.appendingPathComponent("account.key"), atomically: true, encoding: .utf8)
        let app = try parse("account_header: X-A\naccount_key_file: account.key", base: folder.path)
        XCTAssertEqual(app.accountKeys?.hmacKey, Array("file-held-account-key-0123".utf8), "relative to the config, newline stripped")
        let missing = errors("account_header: X-A\naccount_key_file: nope.key", base: folder.path)
        XCTAssertTrue(missing.joined().contains("apps[0].account_key_file"), "\(missing)")
    }

    func testAccountRefusals() {
        let short = errors("account_header: X-A\naccount_key: short")
        XCTAssertTrue(short.joined().contains("at least 16 bytes, got 5"), "\(short)")
        XCTAssertFalse(short.joined().contains("short\""), "the key's value is not printed: \(short)")
        XCTAssertTrue(errors("account_header: X-A").joined().contains("account_key"), "a header needs a key")
        XCTAssertTrue(errors("account_header: X-A\naccount_key: 0123456789abcdef\naccount_key_file: /etc/hostname").joined()
            .contains("not both"))
        XCTAssertTrue(errors("account_header: \"X A\"\naccount_key: 0123456789abcdef").joined().contains("RFC 9110 token"))
        XCTAssertTrue(errors("account_header: X-A\naccount_key: 0123456789abcdef\nmax_keys_per_account: 0").joined()
            .contains("max_keys_per_account: must be from 1 to 1000"))
        XCTAssertTrue(errors("max_keys_per_account: 3").joined().contains("needs account_header"))
        XCTAssertTrue(errors("account_key: 0123456789abcdef").joined().contains("needs account_header"))
        XCTAssertTrue(errors("acount_header: X-A").joined().contains("account_header"), "misspelt key: did you mean")
    }

    /// check-config prints the TTL and the limit, never the account key.
    func testCheckConfigSummaryShowsLifecycleNotTheKey() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("gw.yaml")
        try config("registration_ttl: 720h\naccount_header: X-Account-Id\naccount_key: very-secret-account-key-42\nmax_keys_per_account: 3")
            .write(to: file, atomically: true, encoding: .utf8)
        let report = ConfigCheckReport.check(path: file.path)
        XCTAssertEqual(report.exitCode, 0, report.standardError)
        XCTAssertTrue(report.standardOutput.contains("apps       ABCDE12345.com.example.app (production, registration_ttl 720h, at most 3 keys per X-Account-Id)\n"),
                      report.standardOutput)
        XCTAssertFalse(report.standardOutput.contains("very-secret") || report.standardError.contains("very-secret"))
        try config("environment: production").write(to: file, atomically: true, encoding: .utf8)
        XCTAssertTrue(ConfigCheckReport.check(path: file.path).standardOutput.contains("apps       ABCDE12345.com.example.app (production)\n"))
    }
}
