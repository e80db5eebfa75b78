import Foundation
import GatewayTestSupport
import XCTest

/// `endpoints.fleet_attest_rate` (`{count: 2, per: 1h}`) on `POST /app-attest/v1/register`, over real
/// sockets and a real redis-server, with App Attest evidence from ref_device.py: the attestation form
/// spends an attestation, so it is counted (on arrival, before verification, in the same counter as
/// `attest` challenges); the assertion and device-key-only forms spend none and are never counted.
/// Before, only `attest` challenges were counted: registrations spent attestations without limit.
final class FleetAttestRateRegistrationTests: XCTestCase {
    private var env: DeviceKeyEnvironment!

    override func setUpWithError() throws {
        try super.setUpWithError()
        if !E2EPaths.hasRefDevice { throw XCTSkip(SharedFixtures.absentMessage) }
        env = try DeviceKeyEnvironment(fleetAttestRate: "{count: 2, per: 1h}")
        // At least two minutes before the hour's window ends: the window cannot roll over mid-test.
        if 3_600_000 - env.clock.now() % 3_600_000 < 120_000 { env.clock.advance(seconds: 180) }
    }

    override func tearDown() {
        env?.stop()
        env = nil
        super.tearDown()
    }

    /// A register challenge for a new device key, and the registration fields with an App Attest
    /// attestation (by `appKey`) over its client data.
    private func attestationForm(_ appKey: RefDevice) throws -> (key: OpenSSLDeviceKey, challenge: String, fields: [String: Any]) {
        let key = try env.makeKey()
        let challenge = try env.challenge(kid: key.kid)
        let data = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "software", integrity: [])
        let attestation = try appKey.attestation(challenge: Data(data).base64EncodedString(), appId: E2EEnvironment.appId,
                                                 environment: "development", caDirectory: appKey.caDirectory)
        return (key, challenge, try env.registrationFields(key, challenge: challenge,
                                                           appAttest: ["keyId": appKey.keyId, "attestation": attestation]))
    }

    func testTheThirdAttestationOfTheWindowIsRefusedAndOtherFormsAreNotCounted() throws {
        let first = try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice)
        XCTAssertEqual(try env.register(try attestationForm(first).fields).status, 201, "the first of the fleet's two")
        let second = try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice)
        XCTAssertEqual(try env.register(try attestationForm(second).fields).status, 201, "the second")

        // The third attestation of the window: 429 before any verification, nothing consumed or recorded.
        let third = try attestationForm(try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice))
        let refused = try env.register(third.fields)
        assertRefusal(refused, status: 429, code: "attest_rate_limited", action: "retry")
        let retryAfter = try XCTUnwrap(refused.header("Retry-After").flatMap { Int($0) }, "\(refused)")
        let left = Int((3_600_000 - env.clock.now() % 3_600_000 + 999) / 1000)
        XCTAssertTrue((left - 2...left + 2).contains(retryAfter), "Retry-After \(retryAfter) is the rest of the hour (\(left) s)")
        XCTAssertEqual(try env.redisKeys(kid: third.key.kid), ["aa:{\(base64URL(third.key.kid))}:ch:\(base64URL(third.challenge))"],
                       "the challenge pending, no record, no back-off")
        // Counted before verification: an attestation that would fail is refused by the limit, not by Apple's checks.
        var junk = third.fields
        junk["appAttest"] = ["keyId": first.keyId, "attestation": Data(repeating: 0xA1, count: 40).base64EncodedString()]
        assertRefusal(try env.register(junk), status: 429, code: "attest_rate_limited", action: "retry")
        // One counter with attest challenges.
        assertRefusal(try env.requestChallenge(keyId: third.key.kid, purpose: "attest"), status: 429, code: "attest_rate_limited",
                      action: "retry")

        // The assertion form (the first App Attest key, held since its registration) and the
        // device-key-only form spend no attestation: not counted, not refused.
        let renewed = try env.makeKey()
        let renewedChallenge = try env.challenge(kid: renewed.kid)
        let renewedData = DeviceKeyEnvironment.clientData(challenge: renewedChallenge, point: renewed.point, backing: "software",
                                                          integrity: [])
        let vouched = try env.register(try env.registrationFields(
            renewed, challenge: renewedChallenge,
            appAttest: ["keyId": first.keyId, "assertion": try first.rawAssertion(clientData: renewedData, counter: 1)]))
        XCTAssertEqual(vouched.status, 201, "the assertion form is not limited: \(vouched)")
        try env.registeredKey()  // the device-key-only form is not limited (201 asserted there)

        // The next window admits attestations again.
        env.clock.advance(seconds: 3_600 - (env.clock.now() % 3_600_000) / 1000 + 1)
        let again = try env.register(try attestationForm(try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice)).fields)
        XCTAssertEqual(again.status, 201, "\(again)")
    }
}
