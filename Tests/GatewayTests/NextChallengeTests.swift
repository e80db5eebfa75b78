import Foundation
import GatewayTestSupport
import XCTest

/// The next challenge (issue 11, "One round trip (gateway side)"; DESIGN.md section 9) end to end:
/// real redis-server, the Python upstream, curl over HTTP/1.1, the simulator device. Scenarios in
/// Support/NextChallengeScenarios.swift.
final class NextChallengeTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }

    func testEveryAnswerChainsTheNextRequestWithoutAChallengeCall() throws { try scenarioChainOfRequests() }
    func testNextChallengeIsBoundToItsKeyAndIsAnAssertChallenge() throws { try scenarioNextChallengeBoundToKeyAndPurpose() }
    func testRefusalsOfAKnownKeyCarryOneAndOthersDoNot() throws { try scenarioRefusalsCarryNextChallenge() }
    func testRevokedKeyGetsNone() throws { try scenarioRevokedKeyGetsNone() }
    func testMonitorAnswersCarryOne() throws { try scenarioMonitorAnswersCarryNextChallenge() }
    func testUpstreamCopiesNeverReachTheClient() throws { try scenarioUpstreamCopiesDropped() }
    func testBadGatewayAfterConsumptionCarriesTheStoredNextChallenge() throws { try scenarioUpstreamFailureCarriesNextChallenge() }
}

/// The same over HTTP/2 with prior knowledge (h2c, curl `--http2-prior-knowledge`).
final class NextChallengeOverH2CTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var transport: ClientTransport { .h2c }

    func testEveryAnswerChainsTheNextRequestWithoutAChallengeCall() throws { try scenarioChainOfRequests() }
    func testRefusalsOfAKnownKeyCarryOneAndOthersDoNot() throws { try scenarioRefusalsCarryNextChallenge() }
    func testMonitorAnswersCarryOne() throws { try scenarioMonitorAnswersCarryNextChallenge() }
    func testUpstreamCopiesNeverReachTheClient() throws { try scenarioUpstreamCopiesDropped() }
    func testBadGatewayAfterConsumptionCarriesTheStoredNextChallenge() throws { try scenarioUpstreamFailureCarriesNextChallenge() }
}

/// The same answers from the embedded memory store (same semantics as Redis).
final class NextChallengeMemoryStoreTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }

    func testEveryAnswerChainsTheNextRequestWithoutAChallengeCall() throws { try scenarioChainOfRequests() }
    func testNextChallengeIsBoundToItsKeyAndIsAnAssertChallenge() throws { try scenarioNextChallengeBoundToKeyAndPurpose() }
    func testRefusalsOfAKnownKeyCarryOneAndOthersDoNot() throws { try scenarioRefusalsCarryNextChallenge() }
}

/// `endpoints.next_challenge: false`, Redis, over HTTP/1.1 and HTTP/2.
final class NextChallengeSwitchedOffTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var nextChallenge: Bool { false }

    func testNoAnswerCarriesOneAndChallengeRefusalsKeepTheirFreshChallenge() throws { try scenarioSwitchedOff() }
}

/// `endpoints.next_challenge: false` over h2c.
final class NextChallengeSwitchedOffOverH2CTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }
    override class var nextChallenge: Bool { false }
    override class var transport: ClientTransport { .h2c }

    func testNoAnswerCarriesOneAndChallengeRefusalsKeepTheirFreshChallenge() throws { try scenarioSwitchedOff() }
}
