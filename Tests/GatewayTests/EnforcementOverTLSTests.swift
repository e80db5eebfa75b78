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

    /// The upstream learns the request came over TLS: `X-Forwarded-Proto: https` (the client's own
    /// copy is not believed).
    func testUpstreamSeesForwardedProtoHTTPS() throws {
        let reply = try env.send("GET", "/v1/open/proto", headers: [("X-Forwarded-Proto", "http")])
        XCTAssertEqual(reply.status, 200, "\(reply)")
        XCTAssertEqual(reply.echo?.values("X-Forwarded-Proto"), ["https"])
    }
}
