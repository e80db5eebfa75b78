import Foundation
import XCTest
@testable import GatewayConfig

/// `verdict_token` (top level and `apps[].verdict_token`): what loads, with which values, and the
/// errors for what does not.
final class VerdictTokenConfigTests: XCTestCase {
    private func yaml(_ section: String, store: String = "memory", app: String = "") -> String {
        """
        listen: 127.0.0.1:8080
        store: \(store)
        apps:
          - app_id: ABCDE12345.com.example.app
        \(app)
        upstreams:
          app: http://127.0.0.1:8081
        routes:
          - path_prefix: /
            upstream: app
        \(section)
        """
    }

    func testAbsentMeansNoToken() {
        XCTAssertNil(loadOK(yaml(""))?.configuration.verdictToken)
    }

    func testGeneratedES256KeysWithDefaultsAndAWarningOnTheMemoryStore() throws {
        let loaded = try XCTUnwrap(loadOK(yaml("verdict_token: {}")))
        let section = try XCTUnwrap(loaded.configuration.verdictToken)
        XCTAssertEqual(section.algorithm, .es256)
        XCTAssertEqual(section.lifetime, .seconds(60))
        XCTAssertEqual(section.keys, .generated(storeKey: "aa:verdict-keys", rotation: .seconds(7 * 24 * 3600), publishAhead: .seconds(3600)))
        XCTAssertTrue(loaded.warnings.contains { $0.path == "verdict_token" && $0.message.contains("memory store") }, "\(loaded.warnings)")
        // On Redis: no warning; a short rotation takes a quarter of it as the lead.
        let redis = try XCTUnwrap(loadOK(yaml("verdict_token: {rotation: 8s, store_key: fleet:keys, lifetime: 5s, issuer: gw}", store: "redis://127.0.0.1:6379/0")))
        XCTAssertEqual(redis.configuration.verdictToken?.keys, .generated(storeKey: "fleet:keys", rotation: .seconds(8), publishAhead: .seconds(2)))
        XCTAssertEqual(redis.configuration.verdictToken?.issuer, "gw")
        XCTAssertFalse(redis.warnings.contains { $0.path == "verdict_token" })
    }

    func testKeyFilesResolveAgainstTheConfigFolder() throws {
        let loaded = try XCTUnwrap(loadOK(yaml("verdict_token: {key_files: [keys/a.pem, /abs/b.pem]}"), base: "/etc/gw"))
        XCTAssertEqual(loaded.configuration.verdictToken?.keys, .files(["/etc/gw/keys/a.pem", "/abs/b.pem"]))
    }

    func testHS256FromAFileOrInlineWithAKeyIdPerApp() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try "0123456789abcdef0123456789abcdef\n".write(to: folder.appendingPathComponent("s"), atomically: true, encoding: .utf8)
        let loaded = try XCTUnwrap(loadOK(yaml("verdict_token: {algorithm: HS256, secret_file: s, key_id: k-1}",
                                               app: "    verdict_token: {algorithm: HS256, secret: \"an app secret of thirty-two bytes\", key_id: app.1}"),
                                          base: folder.path))
        XCTAssertEqual(loaded.configuration.verdictToken?.secret, Array("0123456789abcdef0123456789abcdef".utf8))
        XCTAssertEqual(loaded.configuration.verdictToken?.keyID, "k-1")
        XCTAssertNil(loaded.configuration.verdictToken?.keys)
        XCTAssertEqual(loaded.configuration.apps[0].verdictToken?.keyID, "app.1")
    }

    func testMistakesAreErrorsWithTheirPaths() {
        let cases: [(String, String)] = [
            ("verdict_token: {algorithm: RS256}", "verdict_token.algorithm: expected one of ES256 | HS256"),
            ("verdict_token: {algorithm: HS256, secret: short, key_id: a}", "verdict_token.secret: the HS256 secret must be at least 32 bytes"),
            ("verdict_token: {algorithm: HS256, secret: \"0123456789abcdef0123456789abcdef\"}", "verdict_token.key_id: required key is missing"),
            ("verdict_token: {algorithm: HS256, key_id: a}", "verdict_token.secret_file: required key is missing"),
            ("verdict_token: {algorithm: HS256, secret: \"0123456789abcdef0123456789abcdef\", key_id: \"a b\"}", "verdict_token.key_id: must be 1 to 64 characters"),
            ("verdict_token: {algorithm: HS256, secret: \"0123456789abcdef0123456789abcdef\", key_id: a, rotation: 1h}", "verdict_token.rotation: rotation is for algorithm: ES256"),
            ("verdict_token: {secret: x}", "verdict_token.secret: secret is for algorithm: HS256"),
            ("verdict_token: {key_files: [a.pem], rotation: 1h}", "verdict_token.rotation: rotation is for generated keys"),
            ("verdict_token: {key_files: []}", "verdict_token.key_files: list 1 to 8 PEM private key files"),
            ("verdict_token: {rotation: 1h, publish_ahead: 2h}", "verdict_token.publish_ahead: must be shorter than rotation"),
            ("verdict_token: {rotation: 1s}", "verdict_token.rotation: must be from"),
            ("verdict_token: {lifetime: 2h}", "verdict_token.lifetime: must be from"),
            ("verdict_token: {store_key: \"a b\"}", "verdict_token.store_key: must be 1 to 128 printable ASCII characters"),
            ("verdict_token: {lifetme: 5s}", "verdict_token.lifetme: unknown key; did you mean lifetime?"),
            ("verdict_token: yes", "verdict_token: expected a mapping"),
        ]
        for (section, expected) in cases {
            let lines = errorLines(yaml(section))
            XCTAssertTrue(lines.contains { $0.contains(expected) }, "\(section): missing \(expected) in\n\(lines.joined(separator: "\n"))")
        }
        let shared = errorLines(yaml("verdict_token: {rotation: 24h}", app: "    verdict_token: {rotation: 48h}"))
        XCTAssertTrue(shared.contains { $0.contains("apps[0].verdict_token.store_key: aa:verdict-keys is also the key set of verdict_token") }, "\(shared)")
        XCTAssertNotNil(loadOK(yaml("verdict_token: {rotation: 24h}", app: "    verdict_token: {rotation: 48h, store_key: app:keys}")))
        XCTAssertNotNil(loadOK(yaml("verdict_token: {rotation: 24h}", app: "    verdict_token: {rotation: 24h}")))
        let app = errorLines(yaml("", app: "    verdict_token: {algorithm: HS256}"))
        XCTAssertTrue(app.contains { $0.contains("apps[0].verdict_token.secret_file: required key is missing") }, "\(app)")
    }
}
