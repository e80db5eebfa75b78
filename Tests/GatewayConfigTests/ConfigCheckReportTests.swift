import Foundation
import XCTest
@testable import GatewayConfig

/// What check-config prints and its exit status.
final class ConfigCheckReportTests: XCTestCase {
    func testValidFilePrintsSummaryAndExitsZero() throws {
        let report = ConfigCheckReport.check(path: ConfigTestHelpers.configFolder.appendingPathComponent("gateway.yaml").path)
        XCTAssertEqual(report.exitCode, 0)
        XCTAssertEqual(report.standardError, "")
        XCTAssertTrue(report.standardOutput.hasSuffix("""
        Config/gateway.yaml: OK
        listen     127.0.0.1:8080
        admin      127.0.0.1:9901
        store      redis://127.0.0.1:6379/0
        apps       ABCDE12345.com.example.app (production)
        endpoints  /app-attest/v1/{challenge,attest,register,renew,forget} (served before routes; challenge ttl 5m, 32 bytes)
        upstreams  legacy = http://127.0.0.1:8081
        routes (first match wins):
          [0] routes[0]: POST path_prefix /v1/purchases -> legacy, enforce, max_body 1MiB, fail_closed
          [1] routes[1]: * path_prefix / -> legacy, off, max_body 1MiB

        """), report.standardOutput)
    }

    /// The rollout policy (issue 12) is listed where set: app signals, a route's enforce_percent and
    /// signals, the fleet attest rate; a configuration without them prints none of it.
    func testRolloutPolicyIsListedWhenSet() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("gw.yaml")
        let yaml = ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /
            upstream: app
            enforce_percent: 25
            signals: {validation_category: {allowed: ["0100000A"], action: monitor}}
        """, extra: "endpoints: {fleet_attest_rate: {count: 50, per: 1m}}").replacingOccurrences(
            of: "  - app_id: ABCDE12345.com.example.app", with: """
          - app_id: ABCDE12345.com.example.app
            signals: {bundle_version: {minimum: "2.3", action: enforce}}
        """)
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        let out = ConfigCheckReport.check(path: file.path).standardOutput
        XCTAssertTrue(out.contains("\nsignals    ABCDE12345.com.example.app: bundle_version >= 2.3 enforce\n"), out)
        XCTAssertTrue(out.contains("; fleet attest rate 50 per 1m)\n"), out)
        XCTAssertTrue(out.contains(", enforce_percent 25 (missing evidence: monitor), signals validation_category in {0100000a} monitor\n"), out)
        try ConfigTestHelpers.minimal().write(to: file, atomically: true, encoding: .utf8)
        let plain = ConfigCheckReport.check(path: file.path).standardOutput
        XCTAssertFalse(plain.contains("signals") || plain.contains("enforce_percent") || plain.contains("fleet"), plain)
    }

    func testTrustedProxiesAreListedWhenSet() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("gw.yaml")
        try ConfigTestHelpers.minimal(extra: "trusted_proxies: [10.0.0.0/8, \"2001:db8::/32\"]").write(to: file, atomically: true, encoding: .utf8)
        let report = ConfigCheckReport.check(path: file.path)
        XCTAssertEqual(report.exitCode, 0)
        XCTAssertTrue(report.standardOutput.contains("\nproxies    10.0.0.0/8, 2001:db8::/32 (X-Forwarded-For and -Proto believed)\n"), report.standardOutput)
        // Without the key there is no such line (gateway.yaml's empty list included, see above).
        try ConfigTestHelpers.minimal().write(to: file, atomically: true, encoding: .utf8)
        XCTAssertFalse(ConfigCheckReport.check(path: file.path).standardOutput.contains("proxies"))
    }

    func testWarningsGoToStandardErrorWithExitZero() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("gw.yaml")
        try ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n  - path: /x\n    upstream: app").write(to: file, atomically: true, encoding: .utf8)
        let report = ConfigCheckReport.check(path: file.path)
        XCTAssertEqual(report.exitCode, 0)
        XCTAssertEqual(report.standardError, """
        warning: store: the memory store keeps challenges and keys in this process only: lost on restart and not shared between replicas; use redis:// in production
        warning: routes[1]: this route can never match: every request it takes is taken first by routes[0] (routes match in order, first match wins) (line 10, column 5)

        """)
        XCTAssertTrue(report.standardOutput.contains("OK (2 warnings)"))
        XCTAssertTrue(report.standardOutput.contains("[1] routes[1]: * path /x -> app, enforce, max_body 1MiB, fail_closed  (NEVER MATCHES)"), report.standardOutput)
    }

    func testRouteSummaryNamesATierBelowAttested() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("gw.yaml")
        try ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /device\n    upstream: app\n    min_tier: device\n  - path_prefix: /\n    upstream: app")
            .write(to: file, atomically: true, encoding: .utf8)
        let out = ConfigCheckReport.check(path: file.path).standardOutput
        XCTAssertTrue(out.contains("[0] routes[0]: * path_prefix /device -> app, enforce, max_body 1MiB, fail_closed, min_tier device\n"), out)
        // The default (attested) is not spelled out, like the other defaults.
        XCTAssertTrue(out.contains("[1] routes[1]: * path_prefix / -> app, enforce, max_body 1MiB, fail_closed\n"), out)
    }

    func testErrorsExitOneWithOneLinePerIssue() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("bad.yaml")
        try "listen: 127.0.0.1:8080\nstore: memory\napps: []\nupstreams: {app: 'http://127.0.0.1:9'}\nroutes:\n  - path_prefix: /\n    upstream: nope\n".write(to: file, atomically: true, encoding: .utf8)
        let report = ConfigCheckReport.check(path: file.path)
        XCTAssertEqual(report.exitCode, 1)
        XCTAssertEqual(report.standardOutput, "")
        XCTAssertEqual(report.standardError, """
        error: apps: needs at least one app: routes in mode enforce or monitor accept keys of the apps listed here only (line 3, column 7)
        error: routes[0].upstream: unknown upstream "nope" (upstreams: app) (line 7, column 15)
        warning: store: the memory store keeps challenges and keys in this process only: lost on restart and not shared between replicas; use redis:// in production
        warning: upstreams.app: no route uses this upstream (line 4, column 18)
        \(file.path): invalid (2 errors)

        """)
    }

    func testTheOKAndTheInvalidLineNameTheFileAlike() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("sub"), withIntermediateDirectories: true)
        let file = folder.appendingPathComponent("gw.yaml")
        let roundabout = folder.path + "/sub/../gw.yaml"
        try ConfigTestHelpers.minimal().write(to: file, atomically: true, encoding: .utf8)
        XCTAssertTrue(ConfigCheckReport.check(path: roundabout).standardOutput.hasPrefix("\(file.path): OK"))
        try "listen: nowhere\n".write(to: file, atomically: true, encoding: .utf8)
        let bad = ConfigCheckReport.check(path: roundabout)
        XCTAssertEqual(bad.exitCode, 1)
        XCTAssertTrue(bad.standardError.hasSuffix("\n\(file.path): invalid (\(bad.standardError.components(separatedBy: "error: ").count - 1) errors)\n"), bad.standardError)
    }

    /// A file with a plain and a TLS listener, an https upstream with a CA and one without verification.
    private func writeTLSConfiguration(in folder: URL) throws -> URL {
        let file = folder.appendingPathComponent("gw.yaml")
        try """
        listen:
          - 127.0.0.1:8080
          - address: 0.0.0.0:8443
            tls:
              certificates: [{chain: tls/a.pem, key: tls/a.key}]
              min_version: "1.3"
        store: memory
        apps: [{app_id: ABCDE12345.com.example.app}]
        upstreams:
          app: {url: https://api.internal, tls: {ca: ca.pem}}
          raw: {url: https://10.0.0.1, tls: {verify: false}}
        routes:
          - {path_prefix: /raw, upstream: raw}
          - {path_prefix: /, upstream: app}
        """.write(to: file, atomically: true, encoding: .utf8)
        return file
    }

    func testTLSListenersAndHTTPSUpstreamsInTheSummary() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let report = ConfigCheckReport.check(path: try writeTLSConfiguration(in: folder).path)
        let path = folder.standardizedFileURL.path
        XCTAssertEqual(report.exitCode, 0, report.standardError)
        XCTAssertTrue(report.standardOutput.contains("""
        listen     127.0.0.1:8080, 0.0.0.0:8443 (TLS 1.3+, 1 certificate)
        tls        listen[1]: \(path)/tls/a.pem + \(path)/tls/a.key (default)

        """), report.standardOutput)
        XCTAssertTrue(report.standardOutput.contains("upstreams  app = https://api.internal:443 (ca \(path)/ca.pem, name api.internal), raw = https://10.0.0.1:443 (NO VERIFICATION, name 10.0.0.1)\n"), report.standardOutput)
        XCTAssertTrue(report.standardError.contains("warning: upstreams.raw.tls.verify: TLS VERIFICATION OFF: any certificate is accepted from https://10.0.0.1:443"), report.standardError)
    }

    func testFileCheckerFindingsAreReportedAtTheirKeyPaths() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try writeTLSConfiguration(in: folder)
        let path = folder.standardizedFileURL.path
        // Errors from the checker fail the check like configuration errors, in document order.
        let failed = ConfigCheckReport.check(path: file.path, checkFiles: ConfigTestHelpers.pemFilesExist)
        XCTAssertEqual(failed.exitCode, 1)
        XCTAssertEqual(failed.standardOutput, "")
        XCTAssertEqual(failed.standardError.split(separator: "\n").filter { $0.hasPrefix("error: ") }, [
            "error: listen[1].tls.certificates[0]: \(path)/tls/a.pem does not exist or cannot be read (line 5, column 22)",
            "error: listen[1].tls.certificates[0]: \(path)/tls/a.key does not exist or cannot be read (line 5, column 22)",
            "error: upstreams.app.tls.ca: \(path)/ca.pem does not exist or cannot be read (line 10, column 46)",
        ])
        XCTAssertTrue(failed.standardError.hasSuffix("\(file.path): invalid (3 errors)\n"), failed.standardError)
        // Warnings from the checker are printed with the configuration's own, and the check passes.
        var seen: [String] = []
        let warned = ConfigCheckReport.check(path: file.path) { reference in
            seen.append(reference.path)
            return [reference.issue(.warning, "expires in 3 days")]
        }
        XCTAssertEqual(seen, ["listen[1].tls.certificates[0]", "upstreams.app.tls.ca"])
        XCTAssertEqual(warned.exitCode, 0, warned.standardError)
        XCTAssertTrue(warned.standardOutput.contains("OK (4 warnings)"), warned.standardOutput)
        XCTAssertEqual(warned.standardError.split(separator: "\n").map { $0.prefix(48) }, [
            "warning: store: the memory store keeps challenge",
            "warning: listen[1].tls.certificates[0]: expires ",
            "warning: upstreams.app.tls.ca: expires in 3 days",
            "warning: upstreams.raw.tls.verify: TLS VERIFICAT",
        ])
        // A configuration with errors is not file-checked.
        try "listen: 127.0.0.1:8080\n".write(to: file, atomically: true, encoding: .utf8)
        seen = []
        XCTAssertEqual(ConfigCheckReport.check(path: file.path) { seen.append($0.path); return [] }.exitCode, 1)
        XCTAssertEqual(seen, [])
    }

    func testUnreadableFile() {
        let report = ConfigCheckReport.check(path: "/nonexistent/gw.yaml")
        XCTAssertEqual(report.exitCode, 1)
        XCTAssertEqual(report.standardError, "error: cannot read /nonexistent/gw.yaml: no such file\n/nonexistent/gw.yaml: invalid (1 error)\n")
        XCTAssertThrowsError(try GatewayConfiguration.load(path: "/"))
    }

    func testRelativeLoadPathResolvesAgainstCurrentDirectory() throws {
        let folder = try ConfigTestHelpers.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        try ConfigTestHelpers.minimal().write(to: folder.appendingPathComponent("gw.yaml"), atomically: true, encoding: .utf8)
        let previous = FileManager.default.currentDirectoryPath
        XCTAssertTrue(FileManager.default.changeCurrentDirectoryPath(folder.path))
        defer { FileManager.default.changeCurrentDirectoryPath(previous) }
        let loaded = try GatewayConfiguration.load(path: "gw.yaml")
        XCTAssertEqual(loaded.sourcePath, folder.appendingPathComponent("gw.yaml").path)
    }
}
