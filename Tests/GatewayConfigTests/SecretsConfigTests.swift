import Foundation
import GatewayRules
import XCTest
@testable import GatewayConfig

/// Secrets out of the YAML (DESIGN.md section 10): `${NAME}` expansion in values (after YAML parsing,
/// checked, never printed) and `store.password_file` / `store.password` / `store.username`.
final class SecretsConfigTests: XCTestCase {
    private func config(store: String = "store: memory", upstream: String = "http://127.0.0.1:8081", extra: String = "") -> String {
        """
        listen: 127.0.0.1:8080
        \(store)
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app: \(upstream)
        routes:
          - path_prefix: /
            upstream: app
        \(extra)
        """
    }

    private func parse(_ yaml: String, _ environment: [String: String], base: String = "/tmp") throws(ConfigError) -> LoadedConfiguration {
        try GatewayConfiguration.parse(yaml: yaml, baseDirectory: base, environment: environment)
    }

    private func errors(_ yaml: String, _ environment: [String: String], base: String = "/tmp",
                        file: StaticString = #filePath, line: UInt = #line) -> [String] {
        do {
            _ = try parse(yaml, environment, base: base)
            XCTFail("expected errors", file: file, line: line)
            return []
        } catch {
            return error.issues.map(\.description)
        }
    }

    private func redisURL(_ loaded: LoadedConfiguration) -> RedisURL? {
        if case .redis(let url) = loaded.configuration.store.kind { return url }
        return nil
    }

    // MARK: ${NAME}

    func testVariablesExpandInScalarValuesKeepingTheirType() throws {
        let yaml = config(store: "store: {url: \"redis://${REDIS_HOST}:6379/0\", password: \"${REDIS_PASSWORD}\"}",
                          upstream: "http://127.0.0.1:${UP_PORT}",
                          extra: "limits:\n  max_connections: ${MAX_CONN}\ntimeouts: {drain: \"${DRAIN}\"}")
        let loaded = try parse(yaml, ["REDIS_HOST": "redis.internal", "REDIS_PASSWORD": "pa ss:@/word", "UP_PORT": "9000",
                                      "MAX_CONN": "77", "DRAIN": "7s"])
        let url = try XCTUnwrap(redisURL(loaded))
        XCTAssertEqual(url.endpoint, .tcp(host: "redis.internal", port: 6379))
        XCTAssertEqual(url.password, "pa ss:@/word", "taken as is: no URL encoding needed in the password key")
        XCTAssertEqual(loaded.configuration.upstreams.first?.endpoint, .http(host: "127.0.0.1", port: 9000))
        XCTAssertEqual(loaded.configuration.limits.maxConnections, 77, "a plain ${NAME} can be an integer")
        XCTAssertEqual(loaded.configuration.timeouts.drain, .seconds(7))
        // Unset: the same configuration without the variables does not load.
        XCTAssertFalse(errors(yaml, [:]).isEmpty)
    }

    func testDollarEscapesAndLoneDollars() throws {
        let yaml = config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password: \"a$$b$${NOT_EXPANDED}c$d${X}\"}")
        let loaded = try parse(yaml, ["X": "!"])
        XCTAssertEqual(redisURL(loaded)?.password, "a$b${NOT_EXPANDED}c$d!")
    }

    func testKeysAreNotExpanded() {
        let lines = errors(config(extra: "${KEY}: 1"), ["KEY": "limits"])
        XCTAssertEqual(lines.count, 1, "\(lines)")
        XCTAssertTrue(lines.first?.hasPrefix("${KEY}: unknown key") ?? false, "\(lines)")
    }

    func testUnsetVariableIsAnErrorWithItsPath() {
        let lines = errors(config(store: "store:\n  url: redis://127.0.0.1:6379/0\n  password: ${REDIS_PASSWORD}",
                                  upstream: "http://${UP_HOST}:8081"), ["OTHER": "x"])
        XCTAssertEqual(lines, [
            "store.password: the environment variable REDIS_PASSWORD is not set (${REDIS_PASSWORD}); set it, or write $${ for a literal ${ (line 4, column 13)",
            "upstreams.app: the environment variable UP_HOST is not set (${UP_HOST}); set it, or write $${ for a literal ${ (line 8, column 8)",
        ])
    }

    func testVariablesInListItemsCarryTheirIndexInThePath() throws {
        let yaml = config(extra: "trusted_proxies: [10.0.0.0/8, \"${PROXY_NET}\"]")
        XCTAssertEqual(try parse(yaml, ["PROXY_NET": "192.168.0.0/16"]).configuration.trustedProxies.networks.map(\.description),
                       ["10.0.0.0/8", "192.168.0.0/16"])
        XCTAssertEqual(errors(yaml, [:]).first?.hasPrefix("trusted_proxies[1]: the environment variable PROXY_NET is not set"), true)
    }

    func testMalformedReferencesAreErrors() {
        for bad in ["${1X}", "${X", "${}", "${A-B}", "pre${ X}"] {
            let lines = errors(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password: \"\(bad)\"}"), ["X": "1", "A": "2"])
            XCTAssertEqual(lines.count, 1, "\(bad): \(lines)")
            XCTAssertTrue(lines.first?.contains("store.password: ${ must be followed by a variable name") ?? false, "\(bad): \(lines)")
        }
    }

    func testEmptyVariableIsAnEmptyStringNotNull() throws {
        // `password: ${EMPTY}` must not silently mean "no password": it is the empty string.
        // (In a flow mapping {...} quote it: a plain scalar there cannot hold braces.)
        let loaded = try parse(config(store: "store:\n  url: redis://127.0.0.1:6379/0\n  password: ${EMPTY}"), ["EMPTY": ""])
        XCTAssertEqual(redisURL(loaded)?.password, "")
        let lines = errors(config(extra: "limits:\n  max_connections: ${EMPTY}"), ["EMPTY": ""])
        XCTAssertEqual(lines.count, 1, "\(lines)")
    }

    func testExpandedValuesAreNeverPrinted() throws {
        let secret = "S3CRET-VALUE-42"
        let lines = errors(config(extra: "limits:\n  max_connections: ${MAX_CONN}\ntimeouts: {header: \"x${T}\"}"),
                           ["MAX_CONN": secret, "T": secret])
        XCTAssertEqual(lines.count, 2, "\(lines)")
        for line in lines { XCTAssertFalse(line.contains(secret), line) }
        XCTAssertTrue(lines.contains { $0.contains("\"${MAX_CONN}\"") }, "the value as written is shown instead: \(lines)")
        XCTAssertTrue(lines.contains { $0.contains("\"x${T}\"") }, "\(lines)")

        // check-config: the summary and the warnings do not show expanded values either.
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("gw.yaml")
        let host = "backend-\(secret.lowercased()).internal"
        try config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password: \"${PW}\"}", upstream: "http://${UP_HOST}:8081",
                   extra: "admin: 0.0.0.0:${ADMIN_PORT}").write(to: file, atomically: true, encoding: .utf8)
        let report = ConfigCheckReport.check(path: file.path, environment: ["PW": secret, "UP_HOST": host, "ADMIN_PORT": "9901"])
        XCTAssertEqual(report.exitCode, 0, report.standardError)
        XCTAssertTrue(report.standardOutput.contains("app = http://${UP_HOST}:8081"), report.standardOutput)
        XCTAssertTrue(report.standardError.contains("exposes /healthz"), "a warning about the admin address: \(report.standardError)")
        for text in [report.standardOutput, report.standardError] {
            XCTAssertFalse(text.contains(secret), text)
            XCTAssertFalse(text.contains(secret.lowercased()), text)
        }
    }

    // MARK: store password and user name

    func testPasswordFileIsReadWithOneTrailingNewlineStripped() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        for (content, expected) in [("s3cret\n", "s3cret"), ("s3cret\r\n", "s3cret"), ("s3cret", "s3cret"), (" spaced pw ", " spaced pw ")] {
            try content.write(to: folder.appendingPathComponent("redis.pw"), atomically: true, encoding: .utf8)
            let loaded = try parse(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password_file: redis.pw}"), [:], base: folder.path)
            XCTAssertEqual(redisURL(loaded)?.password, expected, "\(content.debugDescription)")
            XCTAssertFalse(loaded.configuration.store.description.contains(expected), "never printed")
        }
        try "user-pw\n".write(to: folder.appendingPathComponent("redis.pw"), atomically: true, encoding: .utf8)
        let acl = try parse(config(store: "store: {url: \"redis://127.0.0.1:6379/2\", username: gateway, password_file: \"${SECRETS}/redis.pw\"}"),
                            ["SECRETS": folder.path])
        XCTAssertEqual(redisURL(acl)?.username, "gateway")
        XCTAssertEqual(redisURL(acl)?.password, "user-pw")
        XCTAssertEqual(redisURL(acl)?.database, 2)
    }

    func testPasswordFileProblemsAreErrorsWithThePath() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("absent.pw").path
        XCTAssertEqual(errors(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password_file: absent.pw}"), [:], base: folder.path),
                       ["store.password_file: cannot read \(missing): no such file (line 2, column 57)"])
        try "".write(to: folder.appendingPathComponent("empty.pw"), atomically: true, encoding: .utf8)
        let empty = errors(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password_file: empty.pw}"), [:], base: folder.path)
        XCTAssertTrue(empty.first?.contains("/empty.pw is empty") ?? false, "\(empty)")
        try "a\nb\n".write(to: folder.appendingPathComponent("two.pw"), atomically: true, encoding: .utf8)
        XCTAssertTrue(errors(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password_file: two.pw}"), [:], base: folder.path)
            .first?.contains("holds more than one line") ?? false)
        XCTAssertTrue(errors(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password_file: \(folder.path)}"), [:], base: folder.path)
            .first?.contains("cannot read \(folder.path)") ?? false, "a folder")
    }

    func testPasswordGivenTwiceIsAnError() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try "pw\n".write(to: folder.appendingPathComponent("redis.pw"), atomically: true, encoding: .utf8)
        XCTAssertEqual(errors(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", password: x, password_file: redis.pw}"), [:], base: folder.path),
                       ["store.password_file: give the Redis password once: password_file or password, not both (line 2, column 70)"])
        let inURL = errors(config(store: "store: {url: \"redis://:inurl@127.0.0.1:6379/0\", password_file: redis.pw}"), [:], base: folder.path)
        XCTAssertEqual(inURL.count, 1)
        XCTAssertTrue(inURL.first?.hasPrefix("store.password_file: the Redis URL already holds a password") ?? false, "\(inURL)")
        XCTAssertFalse(inURL.first?.contains("inurl") ?? true)
        XCTAssertTrue(errors(config(store: "store: {url: \"redis://127.0.0.1:6379/0\", username: gw}"), [:])
            .first?.hasPrefix("store.username: a Redis user name needs a password") ?? false)
        XCTAssertTrue(errors(config(store: "store: {url: memory, password: x}"), [:])
            .first?.hasPrefix("store: username, password and password_file are for a Redis store") ?? false)
        // Passing variant: the URL's password alone still works.
        XCTAssertEqual(redisURL(try parse(config(store: "store: {url: \"redis://:inurl@127.0.0.1:6379/0\"}"), [:]))?.password, "inurl")
    }

    // MARK: admin.ready_requires_store

    func testAdminMappingWithReadyRequiresStore() throws {
        XCTAssertEqual(try parse(config(extra: "admin: 127.0.0.1:9901"), [:]).configuration.readyRequiresStore, false)
        let mapping = try parse(config(extra: "admin: {address: 127.0.0.1:9901, ready_requires_store: true}"), [:]).configuration
        XCTAssertEqual(mapping.admin, .ip(host: "127.0.0.1", port: 9901))
        XCTAssertTrue(mapping.readyRequiresStore)
        let summary = ConfigCheckReport(loaded: try parse(config(extra: "admin: {address: 127.0.0.1:9901, ready_requires_store: true}"), [:]))
        XCTAssertTrue(summary.standardOutput.contains("\nadmin      127.0.0.1:9901 (readiness requires the store)\n"), summary.standardOutput)
        let off = try parse(config(extra: "admin: {address: 127.0.0.1:9901}"), [:]).configuration
        XCTAssertFalse(off.readyRequiresStore)
        XCTAssertEqual(errors(config(extra: "admin: {address: 127.0.0.1:9901, ready_requires_store: yes}"), [:]),
                       ["admin.ready_requires_store: expected true or false, got \"yes\" (write true or false) (line 10, column 56)"])
        XCTAssertEqual(errors(config(extra: "admin: {ready_requires_store: true}"), [:]),
                       ["admin.address: required key is missing (the admin listener's address, e.g. 127.0.0.1:9901) (line 10, column 8)"])
        XCTAssertEqual(errors(config(extra: "admin: {adress: 127.0.0.1:9901}"), [:]),
                       ["admin.adress: unknown key; did you mean address? (line 10, column 9)"])
    }
}
