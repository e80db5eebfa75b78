import GatewayRules
import XCTest
@testable import GatewayConfig

/// Layer 2: every validation rule has a failing case with the exact key path, line and column.
final class ValidationTests: XCTestCase {
    // MARK: collection of all issues, unknown keys

    func testReaderAndVariableProblemsDoNotHideValidationErrors() throws {
        // A duplicate key (layer 1) and an unset variable used to stop loading before validation, so
        // the routes' error only showed once both were fixed. Now all three come in one pass, and the
        // validator does not restate the unset variable's value as "not a URL" at the same path.
        let yaml = """
        listen: 127.0.0.1:8080
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app: http://${NOPE_HOST}:8081
        routes:
          - path_prefix: /
            upstream: app
            mode: enforcing
        listen: 127.0.0.1:9090
        """
        XCTAssertThrowsError(try GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp", environment: [:])) { error in
            XCTAssertEqual((error as? ConfigError)?.issues.map(\.description), [
                "upstreams.app: the environment variable NOPE_HOST is not set (${NOPE_HOST}); set it, or write $${ for a literal ${ (line 6, column 8)",
                "routes[0].mode: expected one of enforce | monitor | off, got \"enforcing\"; did you mean enforce? (line 10, column 11)",
                "listen: duplicate key \"listen\" (first at line 1, column 1) (line 11, column 1)",
            ])
        }
        // The same file with the variable set and the key once: only the route's error is left.
        let fixed = yaml.replacingOccurrences(of: "\nlisten: 127.0.0.1:9090", with: "")
        XCTAssertThrowsError(try GatewayConfiguration.parse(yaml: fixed, baseDirectory: "/tmp", environment: ["NOPE_HOST": "127.0.0.1"])) { error in
            XCTAssertEqual((error as? ConfigError)?.issues.map(\.path), ["routes[0].mode"])
        }
    }

    func testKeyPathContainment() {
        XCTAssertTrue(ConfigIssue.path("routes[0].max_body", isWithin: "routes[0]"))
        XCTAssertTrue(ConfigIssue.path("routes[0].max_body", isWithin: "routes"))
        XCTAssertTrue(ConfigIssue.path("routes[0]", isWithin: "routes[0]"))
        XCTAssertFalse(ConfigIssue.path("routes[0].max_body", isWithin: "route"))
        XCTAssertFalse(ConfigIssue.path("routes[1]", isWithin: "routes[10]"))
        XCTAssertFalse(ConfigIssue.path("routes[10]", isWithin: "routes[1]"))
        XCTAssertFalse(ConfigIssue.path("listen", isWithin: ""), "the file as a whole covers no key")
        XCTAssertTrue(ConfigIssue.path("", isWithin: ""))
    }

    func testAllIssuesAreCollectedInDocumentOrder() {
        let lines = errorLines("""
        listen: localhost:8080
        apps:
          - app_id: abcde12345.com.example.app
        upstreams:
          legacy: ftp://127.0.0.1:8081
        routes:
          - path_prefix: /v1/purchases
            upstream: legacy
            max_body: lots
            mode: enforcing
        timeouts: {header: 10}
        """)
        XCTAssertEqual(lines, [
            "listen: listeners take an IP address, not a host name (\"localhost\"): write 127.0.0.1:8080 or [::1]:8080 (line 1, column 9)",
            "apps[0].app_id: the team ID must be upper case: ABCDE12345.com.example.app (line 3, column 13)",
            "upstreams.legacy: expected http://host:port, https://host:port or unix:/path/to.sock, got \"ftp://127.0.0.1:8081\" (line 5, column 11)",
            "routes[0].max_body: expected a size like 64KiB or 1MiB (or plain bytes), got \"lots\" (line 9, column 15)",
            "routes[0].mode: expected one of enforce | monitor | off, got \"enforcing\"; did you mean enforce? (line 10, column 11)",
            "timeouts.header: expected a duration like 300s, 500ms, 2m or 1h, got \"10\": add a unit (10s or 10ms) (line 11, column 20)",
        ])
    }

    func testUnknownKeysWithSuggestions() {
        let lines = errorLines("""
        listen: 127.0.0.1:8080
        apps:
          - app_id: ABCDE12345.com.example.app
            enviroment: production
        upstream:
          app: http://127.0.0.1:8081
        routes:
          - pathPrefix: /
            upstream: app
            max-body: 1MiB
            listen: 127.0.0.1:1
            colour: blue
        """)
        XCTAssertEqual(lines, [
            "apps[0].enviroment: unknown key; did you mean environment? (line 4, column 5)",
            "upstream: unknown key; did you mean upstreams? (line 5, column 1)",
            "routes[0].pathPrefix: unknown key; did you mean path_prefix? (line 8, column 5)",
            "routes[0].max-body: unknown key; did you mean max_body? (line 10, column 5)",
            "routes[0].listen: unknown key here; listen is a key of top level (line 11, column 5)",
            "routes[0].colour: unknown key (known keys: name, path_prefix, path, methods, upstream, mode, max_body, on_store_error, counter_window, environment, bind_headers, apps, connect_timeout, response_timeout, min_tier, signals, enforce_percent, missing_evidence, max_risk_metric, risk_action) (line 12, column 5)",
            // No "upstreams: required key is missing" or "path_prefix missing": one mistake, one message.
        ])
    }

    func testRequiredKeys() {
        XCTAssertEqual(errorLines("admin: 127.0.0.1:9901\n"), [
            "listen: required key is missing (e.g. listen: 127.0.0.1:8080) (line 1, column 1)",
            "apps: required key is missing: list at least one app (- app_id: TEAMID.bundle.id) whose keys may attest (line 1, column 1)",
            "upstreams: required key is missing (e.g. upstreams: {app: http://127.0.0.1:8081}) (line 1, column 1)",
            "routes: required key is missing (e.g. routes: [{path_prefix: /, upstream: NAME, mode: off}]) (line 1, column 1)",
        ])
    }

    // MARK: listen, admin, tls

    func testListenAcceptsOneOrAListAndRefusesOverlaps() throws {
        let ok = loadOK(ConfigTestHelpers.minimal().replacingOccurrences(of: "listen: 127.0.0.1:8080", with: "listen: [127.0.0.1:8080, '[::1]:8080', unix:run/gw.sock]"), base: "/srv/gw")
        XCTAssertEqual(ok?.configuration.listen, [.plain(.ip(host: "127.0.0.1", port: 8080)), .plain(.ip(host: "::1", port: 8080)), .plain(.unix(path: "/srv/gw/run/gw.sock"))])
        let lines = errorLines(ConfigTestHelpers.minimal().replacingOccurrences(of: "listen: 127.0.0.1:8080", with: "listen:\n  - 0.0.0.0:8080\n  - 127.0.0.1:8080\n  - []"))
        XCTAssertEqual(lines, [
            "listen[1]: 127.0.0.1:8080 overlaps listen[0] (0.0.0.0:8080) (line 3, column 5)",
            "listen[2]: expected an address like 127.0.0.1:8080 or a mapping {address, tls}, got a list (line 4, column 5)",
        ])
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal().replacingOccurrences(of: "listen: 127.0.0.1:8080", with: "listen: []")),
                       ["listen: needs at least one address (line 1, column 9)"])
        // Both families on one port (the IPv6 socket is IPv6-only); two IPv6 listeners still clash.
        let both = loadOK(ConfigTestHelpers.minimal().replacingOccurrences(of: "listen: 127.0.0.1:8080", with: "listen: [0.0.0.0:8080, '[::]:8080']"))
        XCTAssertEqual(both?.configuration.listen, [.plain(.ip(host: "0.0.0.0", port: 8080)), .plain(.ip(host: "::", port: 8080))])
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal().replacingOccurrences(of: "listen: 127.0.0.1:8080", with: "listen: ['[::]:8080', '[::1]:8080']")),
                       ["listen[1]: [::1]:8080 overlaps listen[0] ([::]:8080) (line 1, column 23)"])
    }

    func testAdminMustNotOverlapListen() {
        let lines = errorLines(ConfigTestHelpers.minimal(extra: "admin: 127.0.0.1:8080"))
        XCTAssertEqual(lines, ["admin: 127.0.0.1:8080 overlaps listen[0] (127.0.0.1:8080): the admin endpoints need their own address (line 10, column 8)"])
    }

    func testTopLevelTLSPointsToListeners() {
        let lines = errorLines(ConfigTestHelpers.minimal(extra: "tls: {cert: a.pem, key: a.key}"))
        XCTAssertEqual(lines, ["tls: TLS is set per listener: listen: [{address: 0.0.0.0:8443, tls: {certificates: [{chain: PEM file, key: PEM file}]}}] (line 10, column 6)"])
    }

    // MARK: store

    func testStoreForms() throws {
        func store(_ text: String) throws -> StoreConfiguration {
            try GatewayConfiguration.parse(yaml: ConfigTestHelpers.minimal().replacingOccurrences(of: "store: memory", with: text), baseDirectory: "/srv").configuration.store
        }
        XCTAssertEqual(try store("store: memory"), .memory)
        XCTAssertEqual(try store("store: redis://:s3cr%40t@cache:6380/2").kind,
                       .redis(RedisURL(endpoint: .tcp(host: "cache", port: 6380), password: "s3cr@t", database: 2)))
        XCTAssertEqual(try store("store: unix:///run/redis.sock").kind, .redis(RedisURL(endpoint: .unix(path: "/run/redis.sock"))))
        let mapped = try store("store: {url: 'redis://[::1]', command_timeout: 250ms, connect_timeout: 2s}")
        XCTAssertEqual(mapped, StoreConfiguration(kind: .redis(RedisURL(endpoint: .tcp(host: "::1", port: 6379))), commandTimeout: .milliseconds(250), connectTimeout: .seconds(2)))
        XCTAssertEqual(try store("store: redis://user:pw@h/0").description, "redis://user:***@h:6379/0")
    }

    func testStoreErrors() {
        func lines(_ text: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal().replacingOccurrences(of: "store: memory", with: text))
        }
        XCTAssertEqual(lines("store: memroy"), ["store: expected memory, redis[s]://[[user]:password@]host[:port][/db], redis[s]+cluster://host:port[,host:port...], redis+sentinel://host:port[,host:port...]/master-name or unix:/path/to/redis.sock[?db=N], got \"memroy\"; did you mean memory? (line 2, column 8)"])
        XCTAssertEqual(lines("store: rediss://cache:6379/x"), ["store: the Redis database must be a number from 0 to 2147483647 (e.g. /0 or ?db=0), got \"x\" (line 2, column 8)"])
        XCTAssertEqual(lines("store: redis://cache:6379/x"), ["store: the Redis database must be a number from 0 to 2147483647 (e.g. /0 or ?db=0), got \"x\" (line 2, column 8)"])
        XCTAssertEqual(lines("store: redis://:hunter2@cache:99999/0"), ["store: the Redis port must be a number from 1 to 65535, got \"99999\" (line 2, column 8)"])
        XCTAssertEqual(lines("store: 'memcached://:hunter2@x'"), ["store: expected memory, redis[s]://[[user]:password@]host[:port][/db], redis[s]+cluster://host:port[,host:port...], redis+sentinel://host:port[,host:port...]/master-name or unix:/path/to/redis.sock[?db=N], got \"memcached://:***@x\" (line 2, column 8)"])
        XCTAssertEqual(lines("store: unix://cache/run/redis.sock"), ["store: unix:// takes no host: write unix:///absolute/path/redis.sock (or unix:relative/path/redis.sock) (line 2, column 8)"])
        XCTAssertEqual(lines("store: {command_timeout: 1h}"), [
            "store.url: required key is missing (memory or redis://host:port/db) (line 2, column 8)",
            "store.command_timeout: must be from 1ms to 1m, got 1h (line 2, column 26)",
        ])
    }

    // MARK: apps

    func testAppRules() {
        func lines(_ apps: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal().replacingOccurrences(of: "apps:\n  - app_id: ABCDE12345.com.example.app", with: apps))
        }
        XCTAssertEqual(lines("apps: []"), ["apps: needs at least one app: routes in mode enforce or monitor accept keys of the apps listed here only (line 3, column 7)"])
        XCTAssertEqual(lines("apps:\n  - app_id: ABCDE12345.com.example.app\n  - app_id: ABCDE12345.com.example.app\n    environment: development"),
                       ["apps[1].app_id: ABCDE12345.com.example.app is already listed at apps[0] (use environment: any to allow both environments) (line 5, column 13)"])
        XCTAssertEqual(lines("apps:\n  - app_id: ABCDE1234.com.example.app"),
                       ["apps[0].app_id: the team ID \"ABCDE1234\" must be 10 upper-case letters or digits (Membership details in the Apple Developer account) (line 4, column 13)"])
        XCTAssertEqual(lines("apps:\n  - app_id: ABCDE12345.com..app"),
                       ["apps[0].app_id: the bundle ID \"com..app\" may only contain letters, digits, - and . (no empty parts) (line 4, column 13)"])
        XCTAssertEqual(lines("apps:\n  - app_id: ABCDE12345\n    environment: prod"), [
            "apps[0].app_id: expected TEAMID.bundle.identifier (team ID, a dot, the bundle ID), got \"ABCDE12345\" (line 4, column 13)",
            "apps[0].environment: expected one of production | development | any, got \"prod\"; did you mean production? (line 5, column 18)",
        ])
        XCTAssertEqual(lines("apps:\n  - environment: any"), ["apps[0].app_id: required key is missing (TEAMID.bundle.identifier) (line 4, column 5)"])
    }

    func testEnvironmentAnyWarns() throws {
        let loaded = loadOK(ConfigTestHelpers.minimal().replacingOccurrences(of: "    upstreams", with: "upstreams")
            .replacingOccurrences(of: "  - app_id: ABCDE12345.com.example.app", with: "  - app_id: ABCDE12345.com.example.app\n    environment: any"))
        XCTAssertTrue(loaded?.warnings.contains { $0.path == "apps[0].environment" && $0.message.contains("accepts development keys too") } ?? false)
    }

    // MARK: trust

    func testExtraRootsMustExistAndBePEM() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try "not a certificate".write(to: folder.appendingPathComponent("junk.pem"), atomically: true, encoding: .utf8)
        try "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n".write(to: folder.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
        let yaml = ConfigTestHelpers.minimal(extra: "trust:\n  extra_roots: [missing.pem, junk.pem, ., root.pem, ./root.pem]")
        let lines = errorLines(yaml, base: folder.path)
        XCTAssertEqual(lines, [
            "trust.extra_roots[0]: \(folder.path)/missing.pem does not exist (relative paths resolve against the configuration file's folder, \(folder.path)) (line 11, column 17)",
            "trust.extra_roots[1]: \(folder.path)/junk.pem is not a PEM certificate file (no -----BEGIN CERTIFICATE----- line) (line 11, column 30)",
            "trust.extra_roots[2]: \(folder.path) is a folder, not a PEM file (line 11, column 40)",
            "trust.extra_roots[4]: \(folder.path)/root.pem is listed twice (line 11, column 53)",
        ])
        let loaded = loadOK(ConfigTestHelpers.minimal(extra: "trust:\n  extra_roots: [root.pem]"), base: folder.path)
        XCTAssertEqual(loaded?.configuration.trust.extraRoots, [folder.path + "/root.pem"])
        XCTAssertEqual(loaded?.warnings.first { $0.path == "trust.extra_roots[0]" }?.message.hasPrefix("TEST DEVICES ONLY"), true)
    }

    // MARK: endpoints

    func testEndpointsRules() {
        func lines(_ text: String) -> [String] { errorLines(ConfigTestHelpers.minimal(extra: text)) }
        XCTAssertEqual(lines("endpoints: {prefix: /}"), ["endpoints.prefix: must not be / (the gateway's endpoints would take every request); use e.g. /app-attest/v1 (line 10, column 21)"])
        XCTAssertEqual(lines("endpoints: {prefix: /app-attest/v1/}"), ["endpoints.prefix: write it without a trailing slash: /app-attest/v1 (line 10, column 21)"])
        XCTAssertEqual(lines("endpoints: {prefix: app-attest}"), ["endpoints.prefix: \"app-attest\" must start with / (line 10, column 21)"])
        XCTAssertEqual(lines("endpoints: {prefix: /a/../b}"), ["endpoints.prefix: \"/a/../b\" must not contain . or .. segments (line 10, column 21)"])
        XCTAssertEqual(lines("endpoints: {challenge_ttl: 5s, challenge_bytes: 8}"), [
            "endpoints.challenge_ttl: must be from 10s to 1h, got 5s (line 10, column 28)",
            "endpoints.challenge_bytes: must be from 16 to 64, got 8 (line 10, column 49)",
        ])
        XCTAssertEqual(lines("endpoints: {challenge_ttl: 2h}"), ["endpoints.challenge_ttl: must be from 10s to 1h, got 2h (line 10, column 28)"])
        XCTAssertEqual(lines("endpoints: {challenge_bytes: 65}"), ["endpoints.challenge_bytes: must be from 16 to 64, got 65 (line 10, column 30)"])
    }

    /// `endpoints.next_challenge`: on by default, `false` turns it off, anything but a YAML 1.2
    /// boolean is an error naming the key.
    func testEndpointsNextChallenge() {
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal())?.configuration.endpoints.nextChallenge, true)
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(extra: "endpoints: {next_challenge: false}"))?.configuration.endpoints.nextChallenge,
                       false)
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(extra: "endpoints: {next_challenge: true}"))?.configuration.endpoints.nextChallenge,
                       true)
        for bad in ["yes", "off", "1", "\"false\""] {
            let errors = errorLines(ConfigTestHelpers.minimal(extra: "endpoints: {next_challenge: \(bad)}"))
            XCTAssertEqual(errors.count, 1, "\(bad): \(errors)")
            XCTAssertTrue(errors.first?.hasPrefix("endpoints.next_challenge: ") ?? false, "\(bad): \(errors)")
        }
    }

    /// `signals` on apps and routes: both checks parse, the route's replaces the app's signal by
    /// signal; malformed values, missing keys and an empty policy are errors naming the key.
    func testSignalsRules() throws {
        let yaml = ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /strict
            upstream: app
            signals:
              bundle_version: {minimum: "3.1", action: enforce}
          - path_prefix: /
            upstream: app
        """).replacingOccurrences(of: "  - app_id: ABCDE12345.com.example.app", with: """
          - app_id: ABCDE12345.com.example.app
            signals:
              validation_category: {allowed: ["01000000", "0300AbCd"], action: monitor}
              bundle_version: {minimum: 2.3, action: monitor}
        """)
        let loaded = try XCTUnwrap(loadOK(yaml))
        let app = try XCTUnwrap(loaded.configuration.apps.first?.signals)
        XCTAssertEqual(app.validationCategory?.allowed, [[1, 0, 0, 0], [3, 0, 0xAB, 0xCD]])
        XCTAssertEqual(app.validationCategory?.action, .monitor)
        XCTAssertEqual(app.bundleVersion?.minimum, DottedVersion("2.3"))
        let route = try XCTUnwrap(loaded.configuration.routes.first?.signals)
        XCTAssertNil(route.validationCategory)
        let merged = route.overriding(app)
        XCTAssertEqual(merged.bundleVersion, SignalPolicy.BundleVersion(minimum: try XCTUnwrap(DottedVersion("3.1")), action: .enforce),
                       "the route's check replaces the app's")
        XCTAssertEqual(merged.validationCategory, app.validationCategory, "the app's other check stays")
        XCTAssertNil(loaded.configuration.routes.last?.signals)

        func lines(_ signals: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    signals: \(signals)"))
        }
        XCTAssertEqual(lines("{bundle_version: {minimum: 2.3-beta, action: enforce}}"),
                       ["routes[0].signals.bundle_version.minimum: \"2.3-beta\" is not a dotted number such as 2, 2.3 or 2.3.10 (CFBundleVersion) (line 10, column 41)"])
        XCTAssertEqual(lines("{bundle_version: {minimum: 2, action: block}}").first?.hasPrefix("routes[0].signals.bundle_version.action: expected one of monitor | enforce"), true)
        XCTAssertEqual(lines("{bundle_version: {minimum: 2}}").first?.hasPrefix("routes[0].signals.bundle_version.action: required key is missing"), true)
        XCTAssertEqual(lines("{validation_category: {allowed: [], action: enforce}}").first?.hasPrefix("routes[0].signals.validation_category.allowed: list at least one"), true)
        XCTAssertEqual(lines("{validation_category: {allowed: [\"0g\"], action: enforce}}").first?.hasPrefix("routes[0].signals.validation_category.allowed[0]: \"0g\" is not 1 to 64 bytes of hex"), true)
        XCTAssertEqual(lines("{validation_category: {allowed: [\"010\"], action: enforce}}").count, 1, "odd length")
        XCTAssertEqual(lines("{validation_category: {allowed: [\"01\", \"01\"], action: enforce}}").first?.contains("01 is listed twice") ?? false, true)
        XCTAssertEqual(lines("{}").first?.hasPrefix("routes[0].signals: configure validation_category and/or bundle_version"), true)
        XCTAssertEqual(lines("{bundle_versoin: {minimum: 2, action: enforce}}").first?.hasPrefix("routes[0].signals.bundle_versoin: unknown key; did you mean bundle_version?"), true)
    }

    /// `enforce_percent` (0...100, mode enforce only) and `missing_evidence` (only with it).
    func testEnforcePercentRules() throws {
        func route(_ extra: String) -> String {
            ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n" + extra)
        }
        let loaded = try XCTUnwrap(loadOK(route("    enforce_percent: 25\n    missing_evidence: enforce")))
        XCTAssertEqual(loaded.configuration.routes.first?.enforcePercent, 25)
        XCTAssertEqual(loaded.configuration.routes.first?.missingEvidence, .enforce)
        let defaults = try XCTUnwrap(loadOK(route("    enforce_percent: 0")))
        XCTAssertEqual(defaults.configuration.routes.first?.missingEvidence, .monitor, "missing evidence is monitored by default")
        XCTAssertNil(try XCTUnwrap(loadOK(route(""))).configuration.routes.first?.enforcePercent)
        // At 100 (the end of the ramp) the route is a security boundary: missing evidence is refused by
        // default (a probe found it forwarded, verdict missing); monitoring it there draws a warning.
        let full = try XCTUnwrap(loadOK(route("    enforce_percent: 100")))
        XCTAssertEqual(full.configuration.routes.first?.missingEvidence, .enforce)
        XCTAssertFalse(full.warnings.contains { $0.path == "routes[0].missing_evidence" })
        let open = try XCTUnwrap(loadOK(route("    enforce_percent: 100\n    missing_evidence: monitor")))
        XCTAssertEqual(open.configuration.routes.first?.missingEvidence, .monitor)
        XCTAssertEqual(open.warnings.first { $0.path == "routes[0].missing_evidence" }?.message.hasPrefix("with enforce_percent 100 and missing_evidence monitor"), true)
        XCTAssertFalse(try XCTUnwrap(loadOK(route("    enforce_percent: 99\n    missing_evidence: monitor"))).warnings
            .contains { $0.path == "routes[0].missing_evidence" }, "below 100 monitoring missing evidence is the ramp's point")
        XCTAssertEqual(errorLines(route("    enforce_percent: 101")), ["routes[0].enforce_percent: must be from 0 to 100, got 101 (line 10, column 22)"])
        XCTAssertEqual(errorLines(route("    mode: monitor\n    enforce_percent: 50")),
                       ["routes[0].enforce_percent: enforce_percent ramps enforcement on a route in mode enforce; this route is in mode monitor (line 11, column 22)"])
        XCTAssertEqual(errorLines(route("    missing_evidence: enforce")),
                       ["routes[0].missing_evidence: missing_evidence applies with enforce_percent only (a route without it enforces every request) (line 10, column 23)"])
        XCTAssertEqual(errorLines(route("    enforce_percent: 5\n    missing_evidence: refuse")).first?.hasPrefix("routes[0].missing_evidence: expected one of monitor | enforce"), true)
    }

    /// The cohort is a stable function of the keyId: the first 8 bytes, big-endian, modulo 100.
    func testCohortBucketIsStableAndSpread() {
        XCTAssertEqual(RouteConfiguration.cohortBucket(keyId: [UInt8](repeating: 0, count: 32)), 0)
        XCTAssertEqual(RouteConfiguration.cohortBucket(keyId: [0, 0, 0, 0, 0, 0, 0, 99] + [UInt8](repeating: 0xFF, count: 24)), 99)
        XCTAssertEqual(RouteConfiguration.cohortBucket(keyId: [0, 0, 0, 0, 0, 0, 0, 100] + [UInt8](repeating: 7, count: 24)), 0,
                       "only the first 8 bytes count")
        var generator = SystemRandomNumberGenerator()
        var counts = [Int](repeating: 0, count: 100)
        for _ in 0..<20_000 {
            let bucket = RouteConfiguration.cohortBucket(keyId: (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
            counts[bucket] += 1
        }
        XCTAssertEqual(counts.filter { $0 == 0 }.count, 0, "every bucket is reached")
        XCTAssertLessThan(counts.max() ?? 0, 400, "no bucket takes twice its share (200 expected)")
    }

    /// `endpoints.fleet_attest_rate`: count required (1...1000000), per 1s...1h (default 1s).
    func testFleetAttestRateRules() throws {
        let loaded = try XCTUnwrap(loadOK(ConfigTestHelpers.minimal(extra: "endpoints: {fleet_attest_rate: {count: 50, per: 1m}}")))
        XCTAssertEqual(loaded.configuration.endpoints.fleetAttestRate, EndpointsConfiguration.FleetRate(count: 50, per: .seconds(60)))
        XCTAssertEqual(try XCTUnwrap(loadOK(ConfigTestHelpers.minimal(extra: "endpoints: {fleet_attest_rate: {count: 5}}")))
            .configuration.endpoints.fleetAttestRate?.per, .seconds(1))
        XCTAssertNil(try XCTUnwrap(loadOK(ConfigTestHelpers.minimal())).configuration.endpoints.fleetAttestRate)
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(extra: "endpoints: {fleet_attest_rate: {per: 1s}}")).first?
            .hasPrefix("endpoints.fleet_attest_rate.count: required key is missing"), true)
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(extra: "endpoints: {fleet_attest_rate: {count: 0}}")).first?
            .hasPrefix("endpoints.fleet_attest_rate.count: must be from 1 to 1000000, got 0"), true)
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(extra: "endpoints: {fleet_attest_rate: {count: 1, per: 2h}}")).first?
            .hasPrefix("endpoints.fleet_attest_rate.per: must be from 1s to 1h, got 2h"), true)
    }

    func testRouteInsideEndpointsPrefixIsRefused() {
        let lines = errorLines(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /app-attest/v1/challenge
            upstream: app
          - path_prefix: /
            upstream: app
        """))
        XCTAssertEqual(lines, ["routes[0].path_prefix: /app-attest/v1/challenge is inside endpoints.prefix (/app-attest/v1), which the gateway serves itself before routing: this route can never match (line 8, column 18)"])
        // A catch-all route is fine: the endpoints take precedence, documented.
        XCTAssertNotNil(loadOK(ConfigTestHelpers.minimal()))
    }

    // MARK: headers

    func testHeaderRules() {
        func lines(_ text: String) -> [String] { errorLines(ConfigTestHelpers.minimal(extra: text)) }
        XCTAssertEqual(lines("headers:\n  evidence: {key_id: X-Key-Id}"),
                       ["headers.evidence.key_id: X-Key-Id must start with headers.prefix (App-Attest-) so that ingress strips client copies of it (line 11, column 22)"])
        XCTAssertEqual(lines("headers:\n  prefix: X-"),
                       ["headers.prefix: \"X-\" is too short: every request header starting with it is stripped (line 11, column 11)"])
        XCTAssertEqual(lines("headers:\n  prefix: Content-"),
                       ["headers.prefix: \"Content-\" would strip standard headers such as content-length: every request header starting with the prefix is removed (line 11, column 11)"])
        XCTAssertEqual(lines("headers:\n  prefix: Attest-"), [
            "headers.evidence.key_id: App-Attest-Key-Id (default) does not start with headers.prefix Attest-: set headers.evidence.key_id too (line 11, column 3)",
            "headers.evidence.challenge: App-Attest-Challenge (default) does not start with headers.prefix Attest-: set headers.evidence.challenge too (line 11, column 3)",
            "headers.evidence.assertion: App-Attest-Assertion (default) does not start with headers.prefix Attest-: set headers.evidence.assertion too (line 11, column 3)",
            "headers.evidence.client_data: App-Attest-Client-Data (default) does not start with headers.prefix Attest-: set headers.evidence.client_data too (line 11, column 3)",
            "headers.evidence.signature: App-Attest-Signature (default) does not start with headers.prefix Attest-: set headers.evidence.signature too (line 11, column 3)",
        ] + ConfigSchema.keys(.injected).filter { !["signal_policy", "cohort"].contains($0) }.map { key in
            let name = HeadersConfiguration.Injected().all[ConfigSchema.keys(.injected).firstIndex(of: key)!]
            return "headers.injected.\(key): \(name) (default) does not start with headers.prefix Attest-: set headers.injected.\(key) too (line 11, column 3)"
        })
        XCTAssertEqual(lines("headers:\n  evidence: {challenge: App-Attest-Key-Id}"),
                       ["headers.evidence.challenge: App-Attest-Key-Id is also headers.evidence.key_id (line 11, column 13)"])
        XCTAssertEqual(lines("headers:\n  injected: {verdict: App-Attest-Assertion}"),
                       ["headers.injected.verdict: App-Attest-Assertion is also headers.evidence.assertion (line 11, column 13)"])
        XCTAssertEqual(lines("headers:\n  error: 'Bad Header'"), ["headers.error: \"Bad Header\" is not a valid header name (line 11, column 10)"])
        // Probe: a prefix that begins common request headers took them from every request, and
        // headers.error named after a standard response header dropped it from every response.
        for prefix in ["Cache-", "Sec-", "Origin", "Accept-L", "X-Api-", "Idempotency-", "If-"] {
            XCTAssertEqual(lines("headers:\n  prefix: \(prefix)").first?.hasPrefix("headers.prefix: \"\(prefix)\" would strip standard headers"), true, prefix)
        }
        for name in ["Content-Type", "Set-Cookie", "Retry-After", "Location", "cache-control", "WWW-Authenticate", "Vary"] {
            XCTAssertEqual(lines("headers:\n  error: \(name)").first?.hasPrefix("headers.error: \(name) is a standard header"), true, name)
        }
        XCTAssertNotNil(loadOK(ConfigTestHelpers.minimal(extra: "headers:\n  error: X-Gateway-Error")), "a name of its own loads")
        // A consistent renaming loads.
        let loaded = loadOK(ConfigTestHelpers.minimal(extra: """
        headers:
          prefix: X-Attest-
          evidence: {key_id: X-Attest-Key, challenge: X-Attest-Challenge, assertion: X-Attest-Assertion, client_data: X-Attest-Client-Data, signature: X-Attest-Signature}
          injected: {verdict: X-Attest-Verdict, reason: X-Attest-Reason, key_id: X-Attest-Key, counter: X-Attest-Counter, environment: X-Attest-Env, risk_metric: X-Attest-Risk, validation_category: X-Attest-Category, bundle_version: X-Attest-Bundle, tier: X-Attest-Tier, platform_attested: X-Attest-Platform, integrity: X-Attest-Integrity, risk_age: X-Attest-Risk-Age}
          error: X-Attest-Error
        """))
        XCTAssertEqual(loaded?.configuration.headers.prefix, "X-Attest-")
        XCTAssertEqual(loaded?.configuration.headers.isOwnHeader("x-attest-verdict"), true)
        XCTAssertEqual(loaded?.configuration.headers.lowercasedPrefixBytes, Array("x-attest-".utf8))
        // The names added later follow the prefix unless written (older renamed configurations load).
        XCTAssertEqual(loaded?.configuration.headers.injected.signalPolicy, "X-Attest-Signal-Policy")
        XCTAssertEqual(loaded?.configuration.headers.injected.cohort, "X-Attest-Cohort")
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal())?.configuration.headers.injected.cohort, "App-Attest-Cohort")
        XCTAssertEqual(lines("headers:\n  injected: {cohort: X-Cohort}"),
                       ["headers.injected.cohort: X-Cohort must start with headers.prefix (App-Attest-) so that ingress strips client copies of it (line 11, column 22)"])
    }

    // MARK: upstreams

    func testUpstreamRules() {
        func lines(_ upstreams: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal().replacingOccurrences(of: "upstreams:\n  app: http://127.0.0.1:8081", with: upstreams))
        }
        XCTAssertEqual(lines("upstreams:\n  app: 127.0.0.1:8081"),
                       ["upstreams.app: expected http://host:port, https://host:port or unix:/path/to.sock, got \"127.0.0.1:8081\"; did you mean http://127.0.0.1:8081? (line 6, column 8)"])
        XCTAssertEqual(lines("upstreams:\n  app: http://127.0.0.1:8081/api"),
                       ["upstreams.app: upstream URLs take no path (\"/api\"): requests are forwarded with the path they arrived with (line 6, column 8)"])
        XCTAssertEqual(lines("upstreams:\n  app: http://127.0.0.1:8080"),
                       ["upstreams.app: http://127.0.0.1:8080 is the gateway's own listener listen[0] (127.0.0.1:8080): requests would loop (line 6, column 8)"])
        XCTAssertEqual(lines("upstreams:\n  app: {url: http://b:1, connect_timeout: 0, max_idle_connections: 5000, pool: 3}"), [
            "upstreams.app.connect_timeout: must be from 1ms to 1m, got 0 (line 6, column 43)",
            "upstreams.app.max_idle_connections: must be from 0 to 4096, got 5000 (line 6, column 68)",
            "upstreams.app.pool: unknown key (known keys: url, endpoints, balance, ejection, dns_refresh, health_check, connect_timeout, response_timeout, max_idle_connections, tls) (line 6, column 74)",
        ])
        XCTAssertEqual(lines("upstreams:\n  my.app: http://b:1"), [
            "upstreams.my.app: upstream names use letters, digits, _ and - (at most 64), got \"my.app\" (line 6, column 3)",
            "routes[0].upstream: unknown upstream \"app\" (upstreams: my.app) (line 9, column 15)",
        ])
        XCTAssertEqual(lines("upstreams: {}"), ["upstreams: needs at least one upstream (line 5, column 12)"])
    }

    func testUnusedUpstreamWarns() {
        let loaded = loadOK(ConfigTestHelpers.minimal().replacingOccurrences(of: "  app: http://127.0.0.1:8081", with: "  app: http://127.0.0.1:8081\n  spare: unix:/run/spare.sock"))
        XCTAssertEqual(loaded?.warnings.first { $0.path == "upstreams.spare" }?.description, "upstreams.spare: no route uses this upstream (line 7, column 10)")
        XCTAssertEqual(loaded?.configuration.upstream(named: "spare")?.endpoint, .unix(path: "/run/spare.sock"))
    }

    // MARK: routes

    func testRouteUnknownUpstreamIsRefusedWithSuggestion() {
        let lines = errorLines(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /
            upstream: ap
        """))
        XCTAssertEqual(lines, ["routes[0].upstream: unknown upstream \"ap\"; did you mean app? (line 9, column 15)"])
        let far = errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: billing"))
        XCTAssertEqual(far, ["routes[0].upstream: unknown upstream \"billing\" (upstreams: app) (line 9, column 15)"])
    }

    func testRoutePathRules() {
        func lines(_ route: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - upstream: app\n" + route))
        }
        XCTAssertEqual(lines("    path_prefix: /v1\n    path: /v1/x"), ["routes[0]: set either path_prefix or path, not both (line 8, column 5)"])
        XCTAssertEqual(lines("    mode: off"), ["routes[0].path_prefix: required key is missing: set path_prefix (a path and everything under it) or path (exactly one path) (line 8, column 5)"])
        XCTAssertEqual(lines("    path_prefix: /v1/purchases/"),
                       ["routes[0].path_prefix: write /v1/purchases without the trailing slash: prefixes match whole segments, so it already takes /v1/purchases/... (line 9, column 18)"])
        XCTAssertEqual(lines("    path_prefix: /v1//x"), ["routes[0].path_prefix: \"/v1//x\" must not contain an empty segment (//) (line 9, column 18)"])
        XCTAssertEqual(lines("    path: /v1/%7euser"), ["routes[0].path: \"/v1/%7euser\" has lower-case percent-encoding; write %7E (line 9, column 11)"])
        XCTAssertEqual(lines("    path: /v1/%7Euser"), ["routes[0].path: \"/v1/%7Euser\" has %7E, an encoded ~: write the character itself (line 9, column 11)"])
        XCTAssertEqual(lines("    path: /v1/a%2Fb"), ["routes[0].path: \"/v1/a%2Fb\" must not contain %2F (an encoded /) (line 9, column 11)"])
        XCTAssertEqual(lines("    path: /v1?x=1"), ["routes[0].path: \"/v1?x=1\" must not contain a query (?) (line 9, column 11)"])
        XCTAssertEqual(lines("    path: '/a b'"), ["routes[0].path: \"/a b\" contains \" \", which must be percent-encoded (line 9, column 11)"])
        XCTAssertNotNil(loadOK(ConfigTestHelpers.minimal(routes: "routes:\n  - upstream: app\n    path: /v1/caf%C3%A9")))
    }

    func testMethodRules() {
        func lines(_ methods: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    methods: \(methods)"))
        }
        XCTAssertEqual(lines("[post]"), ["routes[0].methods[0]: methods are case-sensitive and written in upper case: POST (line 10, column 15)"])
        XCTAssertEqual(lines("[POST, POST]"), ["routes[0].methods[1]: POST is listed twice (line 10, column 21)"])
        XCTAssertEqual(lines("[]"), ["routes[0].methods: an empty list would match nothing: omit methods to take every method (line 10, column 14)"])
        XCTAssertEqual(lines("POST"), ["routes[0].methods: expected a list of HTTP methods such as [POST, PUT], got \"POST\" (line 10, column 14)"])
        XCTAssertEqual(lines("['GET /']"), ["routes[0].methods[0]: \"GET /\" is not an HTTP method token (line 10, column 15)"])
        XCTAssertEqual(lines("[CONNECT]"), ["routes[0].methods[0]: CONNECT is not proxied (the gateway is a reverse proxy, not a tunnel) (line 10, column 15)"])
        let typo = loadOK(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    methods: [PSOT, PURGE]"))
        XCTAssertEqual(typo?.warnings.filter { $0.path.hasPrefix("routes[0].methods") }.map(\.description),
                       ["routes[0].methods[0]: PSOT is not a standard method; did you mean POST? (line 10, column 15)"])
    }

    func testRouteValueBounds() {
        func lines(_ extra: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n" + extra))
        }
        XCTAssertEqual(lines("    max_body: 2GiB"), ["routes[0].max_body: must be from 0 to 1GiB, got 2GiB (line 10, column 15)"])
        XCTAssertEqual(lines("    max_body: 1MB"), ["routes[0].max_body: ambiguous unit \"MB\" in \"1MB\": write 1MiB or 1000000 (plain bytes) (line 10, column 15)"])
        XCTAssertEqual(lines("    counter_window: 65"), ["routes[0].counter_window: must be from 0 to 64, got 65 (line 10, column 21)"])
        XCTAssertEqual(lines("    counter_window: -1"), ["routes[0].counter_window: must be from 0 to 64, got -1 (line 10, column 21)"])
        XCTAssertEqual(lines("    on_store_error: open"), ["routes[0].on_store_error: expected one of fail_closed | fail_open, got \"open\" (line 10, column 21)"])
        XCTAssertEqual(lines("    on_store_error: failopen"), ["routes[0].on_store_error: expected one of fail_closed | fail_open, got \"failopen\"; did you mean fail_open? (line 10, column 21)"])
        XCTAssertEqual(lines("    environment: any"), ["routes[0].environment: expected one of production | development, got \"any\" (line 10, column 18)"])
        XCTAssertEqual(lines("    name: 'my route'"), ["routes[0].name: route names use letters, digits and - _ . (at most 64, no spaces), got \"my route\" (line 10, column 11)"])
    }

    func testRouteDefaults() throws {
        let route = try XCTUnwrap(loadOK(ConfigTestHelpers.minimal())?.configuration.routes.first)
        XCTAssertEqual(route, RouteConfiguration(name: "routes[0]", match: .prefix("/"), methods: [], upstream: "app", mode: .enforce,
                                                 maxBody: 1 << 20, onStoreError: .failClosed, counterWindow: 0, environment: nil, bindHeaders: [], apps: nil))
    }

    func testDuplicateRouteNames() {
        let lines = errorLines(ConfigTestHelpers.minimal(routes: """
        routes:
          - {name: api, path_prefix: /v1, upstream: app}
          - {name: api, path_prefix: /, upstream: app}
        """))
        XCTAssertEqual(lines, ["routes[1].name: \"api\" is already the name of routes[0] (line 9, column 12)"])
    }

    func testBindHeadersRules() {
        func lines(_ headers: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    bind_headers: \(headers)"))
        }
        XCTAssertEqual(lines("[Connection]"), ["routes[0].bind_headers[0]: Connection is a hop-by-hop or framing header that proxies rewrite; it cannot be bound (line 10, column 20)"])
        XCTAssertEqual(lines("[Transfer-Encoding]"), ["routes[0].bind_headers[0]: Transfer-Encoding is a hop-by-hop or framing header that proxies rewrite; it cannot be bound (line 10, column 20)"])
        // Expect is answered by the gateway itself and never forwarded: a bound value would never reach the upstream.
        XCTAssertEqual(lines("[Expect]"), ["routes[0].bind_headers[0]: Expect is a hop-by-hop or framing header that proxies rewrite; it cannot be bound (line 10, column 20)"])
        XCTAssertEqual(lines("[HTTP2-Settings]"), ["routes[0].bind_headers[0]: HTTP2-Settings is a hop-by-hop or framing header that proxies rewrite; it cannot be bound (line 10, column 20)"])
        XCTAssertEqual(lines("[app-attest-key-id]"), ["routes[0].bind_headers[0]: app-attest-key-id is in the gateway's own header family (App-Attest-), which is stripped on ingress; it cannot be bound (line 10, column 20)"])
        XCTAssertEqual(lines("[Authorization, authorization]"), ["routes[0].bind_headers[1]: authorization is listed twice (header names are case-insensitive) (line 10, column 35)"])
        XCTAssertEqual(lines("[':authority']"), ["routes[0].bind_headers[0]: pseudo-headers cannot be bound: the method and request-target are bound already (line 10, column 20)"])
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    bind_headers: [Authorization, X-User]"))?
            .configuration.routes[0].bindHeaders, ["Authorization", "X-User"])
    }

    func testRouteAppsAndEnvironmentContradictions() {
        func lines(_ extra: String) -> [String] {
            errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n" + extra))
        }
        XCTAssertEqual(lines("    apps: [ABCDE12345.com.example.ap]"), ["routes[0].apps[0]: ABCDE12345.com.example.ap is not in apps; did you mean ABCDE12345.com.example.app? (line 10, column 12)"])
        XCTAssertEqual(lines("    apps: []"), ["routes[0].apps: an empty list would refuse every request: omit apps to allow every configured app (line 10, column 11)"])
        // The only app is production-only (the default): a development-only route would refuse everything.
        XCTAssertEqual(lines("    environment: development"),
                       ["routes[0].environment: no app allowed on this route accepts development keys (ABCDE12345.com.example.app: production): the route would refuse every request (line 10, column 18)"])
        let ok = loadOK(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    environment: production\n    apps: [ABCDE12345.com.example.app]"))
        XCTAssertEqual(ok?.configuration.routes[0].environment, .production)
        XCTAssertEqual(ok?.configuration.routes[0].apps, [AppID("ABCDE12345.com.example.app")!])
    }

    func testModeOffWithVerificationSettingsWarns() {
        let loaded = loadOK(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    mode: off\n    counter_window: 3\n    bind_headers: [Authorization]"))
        XCTAssertEqual(loaded?.warnings.first { $0.path == "routes[0].mode" }?.description,
                       "routes[0].mode: counter_window, bind_headers have no effect with mode off (line 10, column 11)")
        XCTAssertEqual(loaded?.warnings.first { $0.path == "routes" }?.message, "no route has mode enforce or monitor: the gateway verifies nothing")
    }

    // MARK: limits, timeouts, log

    func testLimitsTimeoutsLog() {
        func lines(_ extra: String) -> [String] { errorLines(ConfigTestHelpers.minimal(extra: extra)) }
        XCTAssertEqual(lines("limits: {max_header_bytes: 512, max_headers: 0, max_connections: \"10\"}"), [
            "limits.max_header_bytes: must be from 1KiB to 1MiB, got 512 (line 10, column 28)",
            "limits.max_headers: must be from 1 to 1000, got 0 (line 10, column 46)",
            "limits.max_connections: expected an integer, got the quoted string \"10\": remove the quotes (line 10, column 66)",
        ])
        XCTAssertEqual(lines("timeouts: {header: 1.5s, drain: 11m, idle: 1d}"), [
            "timeouts.header: expected a duration like 300s, 500ms, 2m or 1h, got \"1.5s\": fractions are not accepted, use a smaller unit (e.g. 1500ms) (line 10, column 20)",
            "timeouts.drain: must be from 0 to 10m, got 11m (line 10, column 33)",
            "timeouts.idle: expected a duration like 300s, 500ms, 2m or 1h, got \"1d\": unknown unit \"d\" (use h, m, s or ms) (line 10, column 44)",
        ])
        XCTAssertEqual(lines("log: {access: yes, format: text, level: verbose}"), [
            "log.access: expected true or false, got \"yes\" (write true or false) (line 10, column 15)",
            "log.format: the text format is not supported yet: json is the only format (line 10, column 28)",
            "log.level: expected one of debug | info | warning | error, got \"verbose\" (line 10, column 41)",
        ])
        let ok = loadOK(ConfigTestHelpers.minimal(extra: "limits: {max_header_bytes: 8KiB}\ntimeouts: {header: 1m30s, drain: 0}\nlog: {access: false, level: debug}"))
        XCTAssertEqual(ok?.configuration.limits.maxHeaderBytes, 8192)
        XCTAssertEqual(ok?.configuration.timeouts.header, .seconds(90))
        XCTAssertEqual(ok?.configuration.timeouts.drain, .zero)
        XCTAssertEqual(ok?.configuration.log, LogConfiguration(access: false, format: .json, level: .debug))
    }

    func testWrongShapesSayWhatWasExpected() {
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(extra: "limits: [1, 2]")),
                       ["limits: expected a mapping with keys such as max_header_bytes, max_headers, max_connections, got a list (line 10, column 9)"])
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - /v1")),
                       ["routes[0]: expected a route mapping {path_prefix, upstream, mode, ...}, got \"/v1\" (line 8, column 5)"])
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(extra: "endpoints: {prefix: {a: b}}")),
                       ["endpoints.prefix: expected an absolute path like /app-attest/v1, got a mapping (line 10, column 21)"])
    }

    func testMemoryStoreWarns() {
        let loaded = loadOK(ConfigTestHelpers.minimal().replacingOccurrences(of: "store: memory\n", with: ""))
        XCTAssertEqual(loaded?.configuration.store, .memory)
        XCTAssertEqual(loaded?.warnings.first { $0.path == "store" }?.message,
                       "store is not set, so the memory store keeps challenges and keys in this process only: lost on restart and not shared between replicas; use redis:// in production")
    }
}
