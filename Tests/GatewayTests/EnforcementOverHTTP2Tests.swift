import Foundation
import GatewayTestSupport
import XCTest

/// The enforcement scenario table over HTTP/2 with prior knowledge on a plain listener (curl
/// `--http2-prior-knowledge`), with a real redis-server: every stream is decided exactly as an
/// HTTP/1.1 request is (binding v1 over `:method` and `:path`, the DATA payload as the body).
final class EnforcementOverH2CTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .h2c }

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
}

/// The enforcement scenario table over HTTP/2 on a TLS listener (ALPN `h2`, curl `--http2`
/// verifying the listener against a test CA), with a real redis-server.
final class EnforcementOverH2TLSTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .h2TLS(ca: TestPKI.shared.root.certificate) }

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

    /// Requests over h2 on TLS are counted with their protocol and TLS version, and the handshakes
    /// with their listener, result and version.
    func testMetricsSayProtocolAndTLSVersion() throws {
        XCTAssertEqual(try env.send("GET", "/v1/open/metrics").status, 200)
        var text = ""
        let deadline = Date().addingTimeInterval(5)
        repeat {
            text = try Curl.get("http://127.0.0.1:\(env.adminPort)/metrics").text
        } while !text.contains("route=\"open\",status=\"200\",verdict=\"none\",protocol=\"h2\",tls=\"TLSv1.3\"") && Date() < deadline
        XCTAssertTrue(text.contains("route=\"open\",status=\"200\",verdict=\"none\",protocol=\"h2\",tls=\"TLSv1.3\""), text)
        XCTAssertTrue(text.contains("attest_gateway_tls_handshakes_total{listener=\"127.0.0.1:\(env.port)\",result=\"ok\",version=\"TLSv1.3\"}"), text)
    }

    /// ALPN chose HTTP/2 and the upstream learns the request came over TLS.
    func testUpstreamSeesForwardedProtoHTTPSOverH2() throws {
        let reply = try env.send("GET", "/v1/open/proto", headers: [("X-Forwarded-Proto", "http")])
        XCTAssertEqual(reply.status, 200, "\(reply)")
        XCTAssertEqual(reply.echo?.values("X-Forwarded-Proto"), ["https"])
    }
}
