import AttestSimulator
import Foundation
import GatewayTestSupport
import XCTest

/// Issue 12, "iOS 27 signals" and "Gradual enforcement", end to end: real redis-server, the Python
/// upstream, curl, simulator devices minting the iOS 27 authenticatorData map. Scenarios below.
final class RolloutPolicyTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var policy: E2EPolicy { .rollout }

    func testEnforcedSignalChecksRefuseAndAbsentSignalsPass() throws { try scenarioEnforcedSignals() }
    func testMonitoredSignalChecksForwardWithThePolicyHeader() throws { try scenarioMonitoredSignals() }
    func testAppPolicyAppliesAndTheRoutesCheckReplacesIt() throws { try scenarioAppPolicyAndOverride() }
    func testCohortDecidesEnforcementStablyPerKey() throws { try scenarioCohort() }
    func testRequestsWithoutAKeyIdFollowMissingEvidence() throws { try scenarioMissingEvidenceRule() }
}

/// The signal and cohort scenarios over HTTP/2 (h2c).
final class RolloutPolicyOverH2CTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var policy: E2EPolicy { .rollout }
    override class var transport: ClientTransport { .h2c }

    func testEnforcedSignalChecksRefuseAndAbsentSignalsPass() throws { try scenarioEnforcedSignals() }
    func testCohortDecidesEnforcementStablyPerKey() throws { try scenarioCohort() }
}

extension E2EPolicy {
    /// App policy: bundle_version at least 10 (enforce). Routes: `/v1/signals-enforced` and
    /// `/v1/signals-monitored` (category 01000000 only, bundle version at least 2.3), `/v1/ramp`
    /// (enforce_percent 50), `/v1/ramp-strict` (50, missing_evidence enforce) and `/v1/ramp-full` (100).
    static let rollout = E2EPolicy(appSignals: "{bundle_version: {minimum: \"10\", action: enforce}}", extraRoutes: """
          - name: signals-enforced
            path_prefix: /v1/signals-enforced
            upstream: app
            signals:
              validation_category: {allowed: ["01000000"], action: enforce}
              bundle_version: {minimum: "2.3", action: enforce}
          - name: signals-monitored
            path_prefix: /v1/signals-monitored
            upstream: app
            signals:
              validation_category: {allowed: ["01000000"], action: monitor}
              bundle_version: {minimum: "2.3", action: monitor}
          - name: ramp
            path_prefix: /v1/ramp
            upstream: app
            enforce_percent: 50
          - name: ramp-strict
            path_prefix: /v1/ramp-strict
            upstream: app
            enforce_percent: 50
            missing_evidence: enforce
          - name: ramp-full
            path_prefix: /v1/ramp-full
            upstream: app
            enforce_percent: 100
        """)
}

extension E2ETestCase {
    /// A signed request whose assertion carries the iOS 27 map (`bundle`, `category`), or none.
    func signalRequest(_ device: SimDevice, target: String, counter: UInt32, bundle: String?, category: [UInt8] = [1, 0, 0, 0],
                       challenge: String? = nil) throws -> SignedRequest {
        device.ios27Extension = bundle.map { IOS27Extension(bundleVersion: $0, validationCategory: category) }
        defer { device.ios27Extension = nil }
        return try env.signedRequest(device, target: target, counter: counter, challenge: challenge)
    }

    /// The sample `name{labels}` in /metrics, 0 when absent.
    func metricValue(_ series: String) throws -> Double {
        let text = try Curl.get("http://127.0.0.1:\(env.adminPort)/metrics").text
        return text.split(separator: "\n").first { $0.hasPrefix(series + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
    }

    func scenarioEnforcedSignals() throws {
        let device = try XCTUnwrap(try env.attestedDevice(.sim) as? SimDevice)
        let route = "/v1/signals-enforced/x"
        let before = try env.upstream.requestCount()
        let version = "2.2.\(Int.random(in: 900...999))"  // a value no other test sends: its own metric series

        let old = try signalRequest(device, target: route, counter: 1, bundle: version)
        let refused = try env.send(old)
        assertRefusal(refused, status: 403, code: "bundle_version_too_old", action: "deny")
        try assertNextChallenge(refused, "a signal refusal of a known key")
        let wrongCategory = try signalRequest(device, target: route, counter: 1, bundle: "2.3", category: [3, 0, 0, 0],
                                              challenge: old.challenge)
        assertRefusal(try env.send(wrongCategory), status: 403, code: "validation_category_not_allowed", action: "deny")
        let notDotted = try signalRequest(device, target: route, counter: 1, bundle: "2.3-beta", challenge: old.challenge)
        assertRefusal(try env.send(notDotted), status: 403, code: "bundle_version_too_old")
        XCTAssertEqual(try env.upstream.requestCount(), before, "no refused request reached the upstream")
        XCTAssertEqual(try env.storedCounter(device), 0, "a policy refusal commits nothing")

        // The same challenge then passes with an allowed version (numeric order: 2.10 > 2.3).
        let newer = try signalRequest(device, target: route, counter: 1, bundle: "2.10", challenge: old.challenge)
        let passed = try env.send(newer)
        XCTAssertEqual(passed.status, 200, "\(passed)")
        XCTAssertEqual(passed.echo?.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(passed.echo?.values("App-Attest-Bundle-Version"), ["2.10"])
        XCTAssertEqual(passed.echo?.values("App-Attest-Validation-Category"), ["01000000"])
        XCTAssertEqual(passed.echo?.values("App-Attest-Signal-Policy"), [])
        // Absence is never suspicious by itself: an assertion without the map passes every check.
        let absent = try env.send(try signalRequest(device, target: route, counter: 2, bundle: nil))
        XCTAssertEqual(absent.status, 200, "\(absent)")
        XCTAssertEqual(absent.echo?.values("App-Attest-Bundle-Version"), [])

        XCTAssertEqual(try metricValue("attest_gateway_signal_decisions_total{route=\"signals-enforced\",signal=\"bundle_version\",value=\"\(version)\",decision=\"refused\",action=\"enforce\"}"), 1)
        XCTAssertGreaterThanOrEqual(try metricValue("attest_gateway_signal_decisions_total{route=\"signals-enforced\",signal=\"validation_category\",value=\"03000000\",decision=\"refused\",action=\"enforce\"}"), 1)
        XCTAssertGreaterThanOrEqual(try metricValue("attest_gateway_signal_decisions_total{route=\"signals-enforced\",signal=\"bundle_version\",value=\"none\",decision=\"absent\",action=\"enforce\"}"), 1)
        XCTAssertGreaterThanOrEqual(try metricValue("attest_gateway_signal_decisions_total{route=\"signals-enforced\",signal=\"bundle_version\",value=\"2.10\",decision=\"allowed\",action=\"enforce\"}"), 1)
    }

    func scenarioMonitoredSignals() throws {
        let device = try XCTUnwrap(try env.attestedDevice(.sim) as? SimDevice)
        let failing = try env.send(try signalRequest(device, target: "/v1/signals-monitored/m", counter: 1, bundle: "1.0",
                                                     category: [3, 0, 0, 0]))
        XCTAssertEqual(failing.status, 200, "monitor forwards: \(failing)")
        XCTAssertEqual(failing.echo?.values("App-Attest-Verdict"), ["valid"], "the evidence itself is valid")
        XCTAssertEqual(failing.echo?.values("App-Attest-Signal-Policy"), ["validation_category_not_allowed,bundle_version_too_old"])
        XCTAssertEqual(try env.storedCounter(device), 1, "a monitored failure commits like any valid request")
        let passing = try env.send(try signalRequest(device, target: "/v1/signals-monitored/m", counter: 2, bundle: "2.3.0"))
        XCTAssertEqual(passing.status, 200)
        XCTAssertEqual(passing.echo?.values("App-Attest-Signal-Policy"), [], "\(passing)")
        // A client cannot forge the header: the family is stripped on ingress.
        let forged = try env.send(try signalRequest(device, target: "/v1/signals-monitored/m", counter: 3, bundle: "3"),
                                  extraHeaders: [("App-Attest-Signal-Policy", "ok"), ("App-Attest-Cohort", "enforced")])
        XCTAssertEqual(forged.echo?.values("App-Attest-Signal-Policy"), [])
        XCTAssertEqual(forged.echo?.values("App-Attest-Cohort"), [])
        XCTAssertGreaterThanOrEqual(try metricValue("attest_gateway_signal_decisions_total{route=\"signals-monitored\",signal=\"validation_category\",value=\"03000000\",decision=\"refused\",action=\"monitor\"}"), 1)
    }

    func scenarioAppPolicyAndOverride() throws {
        let device = try XCTUnwrap(try env.attestedDevice(.sim) as? SimDevice)
        assertRefusal(try env.send(try signalRequest(device, target: "/v1/protected/a", counter: 1, bundle: "9.9")), status: 403,
                      code: "bundle_version_too_old")
        XCTAssertEqual(try env.send(try signalRequest(device, target: "/v1/protected/a", counter: 1, bundle: "10")).status, 200,
                       "the app's minimum is 10")
        XCTAssertEqual(try env.send(try signalRequest(device, target: "/v1/signals-enforced/a", counter: 2, bundle: "9.9")).status, 200,
                       "the route's bundle_version check (2.3) replaces the app's")
        XCTAssertEqual(try env.send(try signalRequest(device, target: "/v1/protected/a", counter: 3, bundle: nil)).status, 200,
                       "absent passes the app's check too")
    }

    /// The cohort bucket computed independently of the gateway: the first 8 bytes of the keyId,
    /// big-endian, modulo 100.
    func bucket(_ device: ClientDevice) -> Int {
        let bytes = Array(Data(base64Encoded: device.keyId) ?? Data())
        return Int(bytes.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 100)
    }

    /// Attested devices until one falls below 50 and one at or above it.
    func devicesInBothCohorts() throws -> (enforced: ClientDevice, monitored: ClientDevice) {
        var enforced: ClientDevice?, monitored: ClientDevice?
        for _ in 0..<40 where enforced == nil || monitored == nil {
            let device = try env.makeDevice(.sim)
            if bucket(device) < 50, enforced == nil { enforced = device }
            if bucket(device) >= 50, monitored == nil { monitored = device }
        }
        guard let enforced, let monitored else { throw ChildProcessError.notReady("no keys in both cohorts after 40 tries") }
        for device in [enforced, monitored] {
            let challenge = try env.challenge(for: device, purpose: "attest")
            let attestation = try device.attestation(challenge: challenge, appId: E2EEnvironment.appId, environment: "development",
                                                     caDirectory: device.caDirectory)
            XCTAssertEqual(try env.attest(keyId: device.keyId, challenge: challenge, attestation: attestation).status, 201)
        }
        return (enforced, monitored)
    }

    func scenarioCohort() throws {
        let (enforced, monitored) = try devicesInBothCohorts()
        let invalidBefore = try metricValue("attest_gateway_cohort_requests_total{route=\"ramp\",cohort=\"monitored\",verdict=\"invalid\"}")
        for round in 1...2 {  // stable: the same decision every time
            let tamperedIn = try env.send(try env.signedRequest(enforced, target: "/v1/ramp/t", body: Array("a".utf8), counter: UInt32(round)),
                                          body: Array("b".utf8))
            assertRefusal(tamperedIn, status: 401, code: "bad_signature")
            let before = try env.upstream.requestCount()
            let tamperedOut = try env.send(try env.signedRequest(monitored, target: "/v1/ramp/t", body: Array("a".utf8),
                                                                 counter: UInt32(round)), body: Array("b".utf8))
            XCTAssertEqual(tamperedOut.status, 200, "round \(round): the monitored cohort is forwarded: \(tamperedOut)")
            XCTAssertEqual(tamperedOut.echo?.values("App-Attest-Verdict"), ["invalid"])
            XCTAssertEqual(tamperedOut.echo?.values("App-Attest-Reason"), ["bad_signature"])
            XCTAssertEqual(tamperedOut.echo?.values("App-Attest-Cohort"), ["monitored"])
            XCTAssertEqual(try env.upstream.requestCount(), before + 1)
        }
        let validIn = try env.send(try env.signedRequest(enforced, target: "/v1/ramp/v", counter: 3))
        XCTAssertEqual(validIn.echo?.values("App-Attest-Cohort"), ["enforced"], "\(validIn)")
        XCTAssertEqual(validIn.echo?.values("App-Attest-Verdict"), ["valid"])
        let validOut = try env.send(try env.signedRequest(monitored, target: "/v1/ramp/v", counter: 3))
        XCTAssertEqual(validOut.echo?.values("App-Attest-Cohort"), ["monitored"])
        XCTAssertEqual(validOut.echo?.values("App-Attest-Verdict"), ["valid"], "monitored keys are still verified and committed")
        XCTAssertEqual(try env.storedCounter(monitored), 3)

        // Failing variant: the same key on a route without enforce_percent is enforced, no cohort header.
        assertRefusal(try env.send(try env.signedRequest(monitored, target: "/v1/protected/t", body: Array("a".utf8), counter: 4),
                                   body: Array("b".utf8)), status: 401, code: "bad_signature")
        let plain = try env.send(try env.signedRequest(monitored, target: "/v1/protected/v", counter: 4))
        XCTAssertEqual(plain.echo?.values("App-Attest-Cohort"), [], "\(plain)")

        XCTAssertEqual(try metricValue("attest_gateway_cohort_requests_total{route=\"ramp\",cohort=\"monitored\",verdict=\"invalid\"}") - invalidBefore, 2)
        XCTAssertGreaterThanOrEqual(try metricValue("attest_gateway_cohort_requests_total{route=\"ramp\",cohort=\"enforced\",verdict=\"invalid\"}"), 2)
    }

    func scenarioMissingEvidenceRule() throws {
        let bare = try env.send("POST", "/v1/ramp/none", body: Array("x".utf8))
        XCTAssertEqual(bare.status, 200, "missing_evidence monitor (the default) forwards: \(bare)")
        XCTAssertEqual(bare.echo?.values("App-Attest-Verdict"), ["missing"])
        XCTAssertEqual(bare.echo?.values("App-Attest-Cohort"), ["none"], "no keyId, no cohort (was monitored)")
        let garbage = try env.send("POST", "/v1/ramp/none", headers: [("App-Attest-Key-Id", "not-a-key")], body: Array("x".utf8))
        XCTAssertEqual(garbage.status, 200, "an undecodable keyId has no cohort either: \(garbage)")
        XCTAssertEqual(garbage.echo?.values("App-Attest-Cohort"), ["none"])
        XCTAssertGreaterThanOrEqual(try metricValue("attest_gateway_cohort_requests_total{route=\"ramp\",cohort=\"none\",verdict=\"missing\"}"), 2,
                                    "counted apart from the monitored half of real keys")
        assertRefusal(try env.send("POST", "/v1/ramp-strict/none", body: Array("x".utf8)), status: 401, code: "assertion_missing")
        assertRefusal(try env.send("POST", "/v1/ramp-strict/none", headers: [("App-Attest-Key-Id", "not-a-key")], body: Array("x".utf8)),
                      status: 401, code: "assertion_missing")
        // At 100 (the end of the ramp) missing evidence is refused by default, as on an enforced route
        // (a probe found it forwarded: anyone passed by sending no evidence).
        assertRefusal(try env.send("POST", "/v1/ramp-full/none", body: Array("x".utf8)), status: 401, code: "assertion_missing")
        assertRefusal(try env.send("POST", "/v1/ramp-full/none", headers: [("App-Attest-Key-Id", "not-a-key")], body: Array("x".utf8)),
                      status: 401, code: "assertion_missing")
        // A keyId that decodes has a cohort even without the other evidence.
        let (enforced, monitored) = try devicesInBothCohorts()
        assertRefusal(try env.send("POST", "/v1/ramp-strict/k", headers: [("App-Attest-Key-Id", enforced.keyId)]), status: 401,
                      code: "assertion_missing")
        let out = try env.send("POST", "/v1/ramp-strict/k", headers: [("App-Attest-Key-Id", monitored.keyId)])
        XCTAssertEqual(out.status, 200, "\(out)")
        XCTAssertEqual(out.echo?.values("App-Attest-Cohort"), ["monitored"])
    }
}
