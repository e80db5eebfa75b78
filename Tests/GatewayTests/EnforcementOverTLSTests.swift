import Foundation
import GatewayTestSupport
import XCTest

/// The enforcement scenario table over HTTP/1.1 on a TLS listener (curl and Python `ssl` verifying
/// the listener's certificate against a test CA), with a real redis-server: every protected request
/// is decided exactly as over plain HTTP/1.1.
final class EnforcementOverTLSTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .http1TLS(ca: TestPKI.shared.root.certificate) }

    func testValidRequestIsForwardedByteIdenticalWithVerdictHeaders() throws { try scenarioValidRequestForwarded(.sim) }
    func testReplayedAssertionIsRefusedAndChangesNothing() throws { try scenarioReplayRefused(.sim) }
    func testSameAssertionOnTwoConnectionsAtOnceIsAcceptedOnce() throws { try scenarioConcurrentDuplicateAcceptedOnce(.sim) }
    func testOutOfOrderCountersInsideWindowAreAcceptedOnceEach() throws { try scenarioWindowAcceptsOutOfOrder(.sim) }
    func testLowerCounterWithoutWindowIsRefused() throws { try scenarioNoWindowRefusesLowerCounter(.sim) }
    func testChangedBodyMethodPathOrQueryIsBadSignatureAndKeepsChallenge() throws { try scenarioChangedRequestRefused(.sim) }
    func testExpiredChallengeIsRefusedWithFreshChallenge() throws { try scenarioExpiredChallenge(.sim) }
    func testUsedChallengeIsRefused() throws { try scenarioUsedChallenge(.sim) }
    func testChallengeIssuedToAnotherKeyIsRefused() throws { try scenarioChallengeOfAnotherKey(.sim) }
    func testAttestChallengeOnAssertionIsWrongPurpose() throws { try scenarioWrongPurpose(.sim) }
    func testWrongChallengeValueDoesNotBurnPendingOne() throws { try scenarioWrongChallengeKeepsPending(.sim) }
    func testUnknownKeyIsKeyUnknownReattest() throws { try scenarioUnknownKey(.sim) }
    func testLowerCaseMethodIsRefusedOnEveryRoute() throws { try scenarioLowerCaseMethodRefused() }

    /// The upstream learns the request came over TLS: `X-Forwarded-Proto: https` (the client's own
    /// copy is not believed).
    func testUpstreamSeesForwardedProtoHTTPS() throws {
        let reply = try env.send("GET", "/v1/open/proto", headers: [("X-Forwarded-Proto", "http")])
        XCTAssertEqual(reply.status, 200, "\(reply)")
        XCTAssertEqual(reply.echo?.values("X-Forwarded-Proto"), ["https"])
    }
}

/// The gateway's TLS listener scanned by testssl.sh (Debian), gated as in
/// ../shared/tools/third-party-test-tools.md: protocols with ALPN, cipher classes, certificate and
/// chain, renegotiation, heartbleed; no finding of severity MEDIUM or above except `cert_revocation`
/// (a test CA has no CRL or OCSP responder).
final class TLSScanTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .http1TLS(ca: TestPKI.shared.root.certificate) }

    func testTestsslFindsNothingOfMediumSeverityOrAbove() throws {
        try ChildProcess.require("testssl")
        let out = env.work.appendingPathComponent("testssl.json").path
        let scan = try ChildProcess.run("testssl", [
            "--quiet", "--color", "0", "--warnings", "off", "--nodns", "none", "--connect-timeout", "5",
            "--openssl-timeout", "5", "-p", "-s", "-S", "-R", "-H", "--add-ca", TestPKI.shared.root.certificate,
            "--jsonfile-pretty", out, "127.0.0.1:\(env.port)"])
        let data = try Data(contentsOf: URL(fileURLWithPath: out))
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any], scan.output)
        let results = try XCTUnwrap((json["scanResult"] as? [[String: Any]])?.first, "no scan result: \(scan.output)")
        var findings: [[String: Any]] = []
        for section in ["protocols", "ciphers", "serverDefaults", "vulnerabilities"] {
            findings += results[section] as? [[String: Any]] ?? []
        }
        XCTAssertGreaterThan(findings.count, 20, "the scan ran its checks: \(scan.output)")
        let serious = findings.filter {
            ["MEDIUM", "HIGH", "CRITICAL"].contains($0["severity"] as? String ?? "") && $0["id"] as? String != "cert_revocation"
        }
        XCTAssertEqual(serious.map { "\($0["id"] ?? "") \($0["severity"] ?? ""): \($0["finding"] ?? "")" }, [])
        let byID = Dictionary(findings.compactMap { f in (f["id"] as? String).map { ($0, f["finding"] as? String ?? "") } },
                              uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(byID["TLS1"], "not offered")
        XCTAssertEqual(byID["TLS1_1"], "not offered")
        XCTAssertEqual(byID["TLS1_3"], "offered with final")
        XCTAssertTrue(byID["ALPN"]?.contains("http/1.1") ?? false, "\(byID["ALPN"] ?? "no ALPN finding")")
    }
}
