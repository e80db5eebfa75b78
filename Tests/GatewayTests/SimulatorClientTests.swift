import AttestSimulator
import Foundation
import XCTest

/// The main flows driven by our own simulator (`AttestSimulator.SoftwareDevice` and `TestCA`,
/// minting in-process) instead of ref_device.py, against the same gateway with Redis: both client
/// implementations must be accepted and refused alike.
final class SimulatorClientTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .redis }
    override class var needsRefDevice: Bool { false }

    func testAttestationIsStoredInRedis() throws {
        let device = try env.attestedDevice(.sim)
        let hash = try env.redisKeyHash(device)
        XCTAssertEqual(hash["app"], E2EEnvironment.appId)
        XCTAssertEqual(hash["env"], "development")
        XCTAssertEqual(hash["ctr"], "0")
    }

    func testValidRequestIsForwardedByteIdenticalWithVerdictHeaders() throws { try scenarioValidRequestForwarded(.sim) }
    func testReplayedAssertionIsRefusedAndChangesNothing() throws { try scenarioReplayRefused(.sim) }
    func testSameAssertionOnTwoConnectionsAtOnceIsAcceptedOnce() throws { try scenarioConcurrentDuplicateAcceptedOnce(.sim, rounds: 3) }
    func testOutOfOrderCountersInsideWindowAreAcceptedOnceEach() throws { try scenarioWindowAcceptsOutOfOrder(.sim) }
    func testLowerCounterWithoutWindowIsRefused() throws { try scenarioNoWindowRefusesLowerCounter(.sim) }
    func testChangedBodyMethodPathOrQueryIsBadSignatureAndKeepsChallenge() throws { try scenarioChangedRequestRefused(.sim) }
    func testExpiredChallengeIsRefusedWithFreshChallenge() throws { try scenarioExpiredChallenge(.sim) }
    func testChallengeIssuedToAnotherKeyIsRefused() throws { try scenarioChallengeOfAnotherKey(.sim) }
    func testWrongChallengeValueDoesNotBurnPendingOne() throws { try scenarioWrongChallengeKeepsPending(.sim) }
    func testUnknownKeyIsKeyUnknownReattest() throws { try scenarioUnknownKey(.sim) }

    /// iOS 27 authenticatorData map on assertions: its values reach the upstream as risk signals,
    /// from both client implementations.
    func testIOS27SignalsAreForwarded() throws {
        let sim = try env.attestedDevice(.sim)
        try XCTUnwrap(sim as? SimDevice).ios27Extension = IOS27Extension(bundleVersion: "42")
        var devices: [ClientDevice] = [sim]
        if env.cas.ref != nil {
            let ref = try env.attestedDevice(.ref)
            try XCTUnwrap(ref as? RefDevice).ios27BundleVersion = "42"
            devices.append(ref)
        }
        for device in devices {
            let reply = try env.send(try env.signedRequest(device, target: "/v1/protected/ios27", counter: 1))
            XCTAssertEqual(reply.status, 200, "\(device.kind): \(reply)")
            XCTAssertEqual(reply.echo?.values("App-Attest-Verdict"), ["valid"], device.kind)
            XCTAssertEqual(reply.echo?.values("App-Attest-Bundle-Version"), ["42"], device.kind)
            XCTAssertEqual(reply.echo?.values("App-Attest-Validation-Category"), ["03000000"], device.kind)
        }
    }

    /// A key attested with one implementation's CA and file format can be driven by the other: the
    /// simulator loads ref_device.py's key file and CA folder.
    func testSimulatorSignsForAKeyAttestedByRefDevice() throws {
        let ref = try env.attestedDevice(.ref)
        let refDevice = try XCTUnwrap(ref as? RefDevice)
        let loaded = try SoftwareDevice.load(from: refDevice.keyFile.path)
        XCTAssertEqual(Data(loaded.keyId).base64EncodedString(), ref.keyId)
        var device = loaded
        let challenge = try env.challenge(for: ref, purpose: "assert")
        let minted = try device.mintAssertion(appId: E2EEnvironment.appId, challenge: Array(Data(base64Encoded: challenge) ?? Data()),
                                              method: "POST", target: "/v1/protected/mixed", body: Array("mixed".utf8),
                                              options: AssertionOptions(counter: 1))
        let signed = SignedRequest(method: "POST", target: "/v1/protected/mixed", body: Array("mixed".utf8), keyId: ref.keyId,
                                   challenge: challenge, assertion: Data(minted.assertionObject).base64EncodedString(), counter: 1)
        let reply = try env.send(signed)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        XCTAssertEqual(reply.echo?.values("App-Attest-Key-Id"), [ref.keyId])
    }
}
