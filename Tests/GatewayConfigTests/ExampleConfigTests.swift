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
        XCTAssertEqual(c.listen, [.plain(.ip(host: "127.0.0.1", port: 8080))])
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
        XCTAssertEqual(c.listen, [.plain(.ip(host: "0.0.0.0", port: 8080))])
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
        XCTAssertEqual(c.routes.map(\.mode), [.enforce, .monitor, .enforce, .off])
        XCTAssertEqual(c.routes.map(\.minTier), [.attested, .attested, .device, .attested])
        XCTAssertEqual(c.routes[0].maxBody, 64 * 1024)
        XCTAssertEqual(loaded.warnings.map(\.path), ["store", "trust.extra_roots[0]"], "\(loaded.warnings)")
        XCTAssertTrue(loaded.warnings[1].message.hasPrefix("TEST DEVICES ONLY"))
    }

    func testTLSEdgeLoadsWithItsValues() throws {
        // GatewayConfig resolves certificate paths without opening them, so the committed file loads
        // although its Config/tls/ files are not in the repository.
        let loaded = try GatewayConfiguration.load(path: ConfigTestHelpers.configFolder.appendingPathComponent("tls.yaml").path)
        let folder = ConfigTestHelpers.configFolder.standardizedFileURL.path + "/tls/"
        let c = loaded.configuration
        XCTAssertEqual(c.listen, [ListenerConfiguration(address: .ip(host: "0.0.0.0", port: 8443), tls: TLSListenerConfiguration(certificates: [
            TLSCertificatePair(chain: folder + "api.example.com.pem", key: folder + "api.example.com.key"),
            TLSCertificatePair(chain: folder + "www.example.com.pem", key: folder + "www.example.com.key"),
        ], minVersion: .tls13))])
        XCTAssertEqual(c.admin, .ip(host: "127.0.0.1", port: 9901))
        XCTAssertEqual(c.upstreams, [UpstreamConfiguration(name: "api", endpoint: .https(host: "10.0.2.15", port: 8443),
                                                           connectTimeout: .seconds(1), responseTimeout: .seconds(15),
                                                           tls: UpstreamTLSConfiguration(ca: folder + "internal-ca.pem", serverName: "api.internal",
                                                                                         serverNameIsExplicit: true))])
        XCTAssertEqual(c.routes.map(\.name), ["purchases", "default"])
        XCTAssertEqual(c.http2, HTTP2Configuration(maxConcurrentStreams: 128, initialWindowSize: 256 << 10, maxHeaderListSize: 16 << 10))
        XCTAssertEqual(c.timeouts.tlsHandshake, .seconds(5))
        XCTAssertEqual(loaded.warnings, [], "\(loaded.warnings)")
        XCTAssertEqual(loaded.tlsFiles.map(\.path), ["listen[0].tls.certificates[0]", "listen[0].tls.certificates[1]", "upstreams.api.tls.ca"])
    }

    func testTLSEdgePassesCheckConfigWithItsFiles() throws {
        let source = ConfigTestHelpers.configFolder.appendingPathComponent("tls.yaml")
        // In the repository Config/tls/ is absent (git-ignored: operators put their own keys there), so a
        // file check reports exactly those files, at the key paths that name them, and nothing else.
        let committed = ConfigTestHelpers.configFolder.appendingPathComponent("tls")
        if !FileManager.default.fileExists(atPath: committed.path) {
            let report = ConfigCheckReport.check(path: source.path, checkFiles: ConfigTestHelpers.pemFilesExist)
            XCTAssertEqual(report.exitCode, 1)
            let errors = report.standardError.split(separator: "\n").filter { $0.hasPrefix("error: ") }
            XCTAssertTrue(report.standardError.hasSuffix("\(source.path): invalid (5 errors)\n"), report.standardError)
            XCTAssertEqual(errors.map { $0.dropFirst(7).prefix { $0 != ":" } }, [
                "listen[0].tls.certificates[0]", "listen[0].tls.certificates[0]",
                "listen[0].tls.certificates[1]", "listen[0].tls.certificates[1]", "upstreams.api.tls.ca",
            ], report.standardError)
            XCTAssertTrue(errors[0].hasSuffix("\(committed.standardizedFileURL.path)/api.example.com.pem does not exist or cannot be read (line 16, column 11)"), report.standardError)
        }
        // A copy next to generated certificates and keys (openssl) passes the same check.
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let tls = folder.appendingPathComponent("tls")
        try FileManager.default.createDirectory(at: tls, withIntermediateDirectories: true)
        for name in ["api.example.com", "www.example.com", "internal-ca"] {
            let result = try ChildProcess.run("openssl", ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                                                          "-keyout", tls.appendingPathComponent("\(name).key").path,
                                                          "-out", tls.appendingPathComponent("\(name).pem").path,
                                                          "-subj", "/CN=\(name)", "-addext", "subjectAltName=DNS:\(name)", "-days", "1"])
            XCTAssertEqual(result.status, 0, result.output)
        }
        let copy = folder.appendingPathComponent("tls.yaml")
        try FileManager.default.copyItem(at: source, to: copy)
        let report = ConfigCheckReport.check(path: copy.path, checkFiles: ConfigTestHelpers.pemFilesExist)
        XCTAssertEqual(report.exitCode, 0, report.standardError)
        XCTAssertEqual(report.standardError, "")
        let path = folder.standardizedFileURL.path
        XCTAssertTrue(report.standardOutput.contains("""
        listen     0.0.0.0:8443 (TLS 1.3+, 2 certificates)
        tls        listen[0]: \(path)/tls/api.example.com.pem + \(path)/tls/api.example.com.key (default), \(path)/tls/www.example.com.pem + \(path)/tls/www.example.com.key
        admin      127.0.0.1:9901

        """), report.standardOutput)
        XCTAssertTrue(report.standardOutput.contains("upstreams  api = https://10.0.2.15:8443 (ca \(path)/tls/internal-ca.pem, name api.internal)\n"), report.standardOutput)
    }

    func testEveryCommittedYAMLIsCoveredAbove() throws {
        let files = try FileManager.default.contentsOfDirectory(atPath: ConfigTestHelpers.configFolder.path)
            .filter { $0.hasSuffix(".yaml") || $0.hasSuffix(".yml") }.sorted()
        XCTAssertEqual(files, ["gateway.yaml", "quickstart.yaml", "sidecar.yaml", "tls.yaml"], "a new example needs a loading test")
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
