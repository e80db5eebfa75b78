import Foundation
import GatewayRules
import XCTest
import GatewayTestSupport
@testable import GatewayConfig

/// The issue's example and every committed Config/*.yaml load, with their values as written.
final class ExampleConfigTests: XCTestCase {
    /// The example from the issue, verbatim.
    static let issueExample = """
    listen: 127.0.0.1:8080
    admin: 127.0.0.1:9901
    store: redis://127.0.0.1:6379/0        # or: memory
    apps:
      - app_id: ABCDE12345.com.example.app
        environment: production             # production | development | any
    trust:
      extra_roots: []                       # PEM files, for test devices only
    endpoints:
      prefix: /app-attest/v1
      challenge_ttl: 300s
    upstreams:
      legacy: http://127.0.0.1:8081
    routes:
      - path_prefix: /v1/purchases
        methods: [POST]
        upstream: legacy
        mode: enforce
        max_body: 1MiB
      - path_prefix: /
        upstream: legacy
        mode: off
    """

    func testIssueExampleLoadsWithItsValues() throws {
        let loaded = try GatewayConfiguration.parse(yaml: Self.issueExample, baseDirectory: "/etc/attest-gateway")
        let c = loaded.configuration
        XCTAssertEqual(c.listen, [.ip(host: "127.0.0.1", port: 8080)])
        XCTAssertEqual(c.admin, .ip(host: "127.0.0.1", port: 9901))
        XCTAssertEqual(c.store.kind, .redis(RedisURL(endpoint: .tcp(host: "127.0.0.1", port: 6379), database: 0)))
        XCTAssertEqual(c.store.commandTimeout, .milliseconds(500))
        XCTAssertEqual(c.apps, [AppConfiguration(appID: AppID("ABCDE12345.com.example.app")!, environment: .production)])
        XCTAssertEqual(c.apps[0].appID.teamID, "ABCDE12345")
        XCTAssertEqual(c.apps[0].appID.bundleID, "com.example.app")
        XCTAssertEqual(c.trust.extraRoots, [])
        XCTAssertEqual(c.endpoints.prefix, "/app-attest/v1")
        XCTAssertEqual(c.endpoints.challengeTTL, .seconds(300))
        XCTAssertEqual(c.endpoints.challengeBytes, 32)
        XCTAssertEqual(c.upstreams, [UpstreamConfiguration(name: "legacy", endpoint: .http(host: "127.0.0.1", port: 8081))])
        XCTAssertEqual(c.routes.count, 2)
        XCTAssertEqual(c.routes[0], RouteConfiguration(name: "routes[0]", match: .prefix("/v1/purchases"), methods: ["POST"],
                                                       upstream: "legacy", mode: .enforce, maxBody: 1 << 20))
        XCTAssertEqual(c.routes[1], RouteConfiguration(name: "routes[1]", match: .prefix("/"), methods: [], upstream: "legacy", mode: .off))
        XCTAssertEqual(c.headers, HeadersConfiguration())
        XCTAssertEqual(c.headers.evidence.keyID, "App-Attest-Key-Id")
        XCTAssertEqual(c.limits, LimitsConfiguration(maxHeaderBytes: 16384, maxHeaders: 100, maxConnections: 4096))
        XCTAssertEqual(c.timeouts, TimeoutsConfiguration(header: .seconds(10), body: .seconds(30), idle: .seconds(60), drain: .seconds(30)))
        XCTAssertEqual(c.log, LogConfiguration(access: true, format: .json, level: .info))
        XCTAssertEqual(loaded.warnings, [], "\(loaded.warnings)")
        // The compiled table routes as the operator expects.
        XCTAssertEqual(loaded.routeTable.match(method: "POST", path: "/v1/purchases"), 0)
        XCTAssertEqual(loaded.routeTable.match(method: "GET", path: "/v1/purchases"), 1)
    }

    func testCommittedGatewayYAMLIsTheIssueExample() throws {
        let file = ConfigTestHelpers.configFolder.appendingPathComponent("gateway.yaml")
        let loaded = try GatewayConfiguration.load(path: file.path)
        let example = try GatewayConfiguration.parse(yaml: Self.issueExample, baseDirectory: ConfigTestHelpers.configFolder.path)
        XCTAssertEqual(loaded.configuration, example.configuration)
        XCTAssertEqual(loaded.sourcePath, file.standardizedFileURL.path)
    }

    func testSidecarLoads() throws {
        let loaded = try GatewayConfiguration.load(path: ConfigTestHelpers.configFolder.appendingPathComponent("sidecar.yaml").path)
        let c = loaded.configuration
        XCTAssertEqual(c.listen, [.ip(host: "0.0.0.0", port: 8080)])
        XCTAssertEqual(c.store.kind, .redis(RedisURL(endpoint: .tcp(host: "redis.attest.svc.cluster.local", port: 6379))))
        XCTAssertEqual(c.store.commandTimeout, .milliseconds(250))
        XCTAssertEqual(c.upstream(named: "app")?.responseTimeout, .seconds(15))
        XCTAssertEqual(c.upstream(named: "app")?.maxIdleConnections, 32)
        XCTAssertEqual(c.routes.map(\.name), ["payments", "account", "catalogue", "app-health", "default"])
        XCTAssertEqual(c.routes[0].bindHeaders, ["Authorization"])
        XCTAssertEqual(c.routes[0].maxBody, 256 * 1024)
        XCTAssertEqual(c.routes[1].counterWindow, 4)
        XCTAssertEqual(c.routes[1].mode, .enforce)
        XCTAssertEqual(c.routes[2].onStoreError, .failOpen)
        XCTAssertEqual(c.routes[3].match, .exact("/healthz"))
        XCTAssertEqual(c.timeouts.idle, .seconds(120))
        XCTAssertEqual(c.limits.maxHeaderBytes, 32 * 1024)
        // The exposed admin port and fail_open are deliberate; check-config says so.
        XCTAssertEqual(Set(loaded.warnings.map(\.path)), ["admin", "routes[2].on_store_error"], "\(loaded.warnings)")
    }

    func testQuickstartNeedsItsTestCAAndLoadsWithIt() throws {
        let source = ConfigTestHelpers.configFolder.appendingPathComponent("quickstart.yaml")
        // Committed without the CA (each developer generates their own): the only error says where it is expected.
        let root = ConfigTestHelpers.configFolder.appendingPathComponent("test-ca/root.pem")
        if !FileManager.default.fileExists(atPath: root.path) {
            XCTAssertThrowsError(try GatewayConfiguration.load(path: source.path)) { error in
                let issues = (error as! ConfigError).issues
                XCTAssertEqual(issues.count, 1, "\(issues)")
                XCTAssertEqual(issues.first?.path, "trust.extra_roots[0]")
                XCTAssertTrue(issues.first?.message.contains("\(root.path) does not exist") ?? false, "\(issues)")
            }
        }
        // A copy next to a real PEM certificate (made by openssl) loads; the relative path resolves
        // against the file's folder, not the current directory.
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("test-ca"), withIntermediateDirectories: true)
        let pem = folder.appendingPathComponent("test-ca/root.pem")
        let result = try ChildProcess.run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                      "-keyout", folder.appendingPathComponent("test-ca/root.key").path,
                                                      "-out", pem.path, "-subj", "/CN=attest-gateway test CA", "-days", "1"])
        XCTAssertEqual(result.status, 0, result.output)
        let copy = folder.appendingPathComponent("quickstart.yaml")
        try FileManager.default.copyItem(at: source, to: copy)
        let loaded = try GatewayConfiguration.load(path: copy.path)
        let c = loaded.configuration
        XCTAssertEqual(c.store, .memory)
        XCTAssertEqual(c.trust.extraRoots, [pem.standardizedFileURL.path])
        XCTAssertEqual(c.apps[0].environment, .development)
        XCTAssertEqual(c.endpoints.challengeTTL, .seconds(120))
        XCTAssertEqual(c.routes.map(\.mode), [.enforce, .monitor, .off])
        XCTAssertEqual(c.routes[0].maxBody, 64 * 1024)
        XCTAssertEqual(loaded.warnings.map(\.path), ["store", "trust.extra_roots[0]"], "\(loaded.warnings)")
        XCTAssertTrue(loaded.warnings[1].message.hasPrefix("TEST DEVICES ONLY"))
    }

    func testEveryCommittedYAMLIsCoveredAbove() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: ConfigTestHelpers.configFolder.path)
            .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
        XCTAssertEqual(files, ["gateway.yaml", "quickstart.yaml", "sidecar.yaml"], "a new example needs a loading test")
    }

    func testReferenceDocumentsEveryKey() throws {
        let reference = try String(contentsOf: ConfigTestHelpers.configFolder.appendingPathComponent("REFERENCE.md"), encoding: .utf8)
        for section in ConfigSchema.Section.allCases {
            for key in ConfigSchema.keys(section) {
                XCTAssertTrue(reference.contains("`\(key)`"), "REFERENCE.md does not document \(section.rawValue) key \(key)")
            }
        }
    }
}
