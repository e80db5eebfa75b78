import GatewayRules
import XCTest
@testable import GatewayConfig

/// The configuration of device keys and tiers (DESIGN.md section 8): route `min_tier`, app
/// `integrity_refuse` / `integrity_lower`, and the new header names; each with its refusal.
final class DeviceKeyConfigTests: XCTestCase {
    func testMinTierDefaultsToAttestedAndTakesDevice() {
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal())?.configuration.routes.first?.minTier, .attested)
        let loaded = loadOK(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /
            upstream: app
            min_tier: device
        """))
        XCTAssertEqual(loaded?.configuration.routes.first?.minTier, .device)
        let lines = errorLines(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /
            upstream: app
            min_tier: platform
        """))
        XCTAssertTrue(lines.contains { $0.hasPrefix("routes[0].min_tier:") && $0.contains("attested") && $0.contains("device") }, "\(lines)")
        let off = loadOK(ConfigTestHelpers.minimal(routes: """
        routes:
          - path_prefix: /
            upstream: app
            mode: off
            min_tier: device
        """))
        XCTAssertTrue(off?.warnings.contains { $0.path == "routes[0].mode" && $0.message.contains("min_tier") } ?? false, "\(String(describing: off?.warnings))")
    }

    func testIntegrityPolicyListsAreValidated() {
        let yaml = """
        listen: 127.0.0.1:8080
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
            integrity_refuse: [debugger, dyld_inject]
            integrity_lower: [jb_files, custom_probe]
        upstreams:
          app: http://127.0.0.1:8081
        routes:
          - path_prefix: /
            upstream: app
        """
        let loaded = loadOK(yaml)
        XCTAssertEqual(loaded?.configuration.apps.first?.integrity, IntegrityPolicy(refuse: ["debugger", "dyld_inject"], lower: ["jb_files", "custom_probe"]))
        XCTAssertTrue(loaded?.warnings.contains { $0.path == "apps[0].integrity_lower[1]" && $0.message.contains("not a documented") } ?? false,
                      "\(String(describing: loaded?.warnings))")
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal())?.configuration.apps.first?.integrity, IntegrityPolicy())

        let bad = errorLines(yaml.replacingOccurrences(of: "[jb_files, custom_probe]", with: "[/var/lib/cydia, jb_files]")
                                 .replacingOccurrences(of: "[debugger, dyld_inject]", with: "debugger"))
        XCTAssertTrue(bad.contains { $0.hasPrefix("apps[0].integrity_lower[0]:") && $0.contains("[a-z0-9_]") }, "\(bad)")
        XCTAssertTrue(bad.contains { $0.hasPrefix("apps[0].integrity_refuse:") }, "\(bad)")
    }

    func testHeaderNamesForSignatureAndTier() {
        let defaults = loadOK(ConfigTestHelpers.minimal())?.configuration.headers
        XCTAssertEqual(defaults?.evidence.signature, "App-Attest-Signature")
        XCTAssertEqual(defaults?.injected.tier, "App-Attest-Tier")
        XCTAssertEqual(defaults?.injected.platformAttested, "App-Attest-Platform-Attested")
        XCTAssertEqual(defaults?.injected.integrity, "App-Attest-Integrity")
        let renamed = loadOK(ConfigTestHelpers.minimal(extra: """
        headers:
          evidence: {signature: App-Attest-Device-Signature}
          injected: {tier: App-Attest-Trust}
        """))
        XCTAssertEqual(renamed?.configuration.headers.evidence.signature, "App-Attest-Device-Signature")
        XCTAssertEqual(renamed?.configuration.headers.injected.tier, "App-Attest-Trust")
        let lines = errorLines(ConfigTestHelpers.minimal(extra: """
        headers:
          evidence: {signature: X-Signature}
          injected: {integrity: App-Attest-Signature}
        """))
        XCTAssertTrue(lines.contains { $0.hasPrefix("headers.evidence.signature:") && $0.contains("must start with headers.prefix") }, "\(lines)")
    }
}
