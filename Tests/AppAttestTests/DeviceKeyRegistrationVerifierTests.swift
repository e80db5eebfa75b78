import AppAttest
import AttestCrypto
import AttestSimulator
import GatewayRules
import XCTest

/// The pure device-key registration verifier (DESIGN.md section 8): time, anchors and the held App
/// Attest key are inputs; each check refuses with its reason code, beside its passing case.
final class DeviceKeyRegistrationVerifierTests: XCTestCase {
    static let appId = "ABCDE12345.com.example.gateway-test"

    private struct Fixture {
        let ca: SimCA
        let verifier: DeviceKeyRegistrationVerifier
        let deviceKey: ECPrivateKey
        let challenge: [UInt8]
    }

    private func fixture() throws -> Fixture {
        let ca = try SimCA.generate()
        let attestations = AttestationVerifier(trust: try ca.trustAnchors(), apps: [AppPolicy(appId: Self.appId, environment: .any)])
        return Fixture(ca: ca, verifier: DeviceKeyRegistrationVerifier(attestations: attestations),
                       deviceKey: try ECPrivateKey(generatingOn: .p256), challenge: try SecureRandom.bytes(count: 32))
    }

    private func registration(_ f: Fixture, point: [UInt8]? = nil, backing: String = "software", integrity: [String] = [],
                              signer: ECPrivateKey? = nil, signature: [UInt8]? = nil,
                              appAttest: DeviceKeyRegistration.AppAttestEvidence? = nil) throws -> DeviceKeyRegistration {
        let key = point ?? f.deviceKey.publicKeyPoint
        let data = DeviceKeyRegistration.clientData(challenge: f.challenge, publicKey: key, backing: backing, integrity: integrity)
        return DeviceKeyRegistration(publicKey: key, challenge: f.challenge,
                                     signature: try signature ?? (signer ?? f.deviceKey).signature(for: data),
                                     backing: backing, integrity: integrity, appAttest: appAttest)
    }

    func testClientDataFraming() {
        let data = DeviceKeyRegistration.clientData(challenge: [1, 2], publicKey: [4], backing: "software", integrity: ["a", "b_c"])
        XCTAssertEqual(data, [0, 0, 0, 11] + Array("register-v1".utf8) + [0, 0, 0, 2, 1, 2] + [0, 0, 0, 1, 4]
                       + [0, 0, 0, 8] + Array("software".utf8) + [0, 0, 0, 5] + Array("a,b_c".utf8))
        XCTAssertEqual(DeviceKeyRegistration.clientData(challenge: [], publicKey: [], backing: "", integrity: []).suffix(4), [0, 0, 0, 0])
    }

    func testDeviceKeyOnlyIsAcceptedAndEachFieldIsChecked() throws {
        let f = try fixture()
        guard case .accepted(let key) = f.verifier.verify(try registration(f, integrity: ["jb_files", "new_code"]), now: 0) else {
            return XCTFail("a well-formed device-key registration is accepted")
        }
        XCTAssertEqual(key.keyId, SHA256.hash(f.deviceKey.publicKeyPoint))
        XCTAssertFalse(key.platformAttested)
        XCTAssertFalse(key.platformTokenSpent)
        XCTAssertEqual(key.backing, .software)
        XCTAssertEqual(key.integrity, ["jb_files", "new_code"])
        XCTAssertNil(key.appId)

        let p384 = try ECPrivateKey(generatingOn: .p384)
        XCTAssertEqual(f.verifier.verify(try registration(f, point: p384.publicKeyPoint, signer: p384), now: 0).reason, .publicKeyInvalid)
        var offCurve = f.deviceKey.publicKeyPoint
        offCurve[64] ^= 1
        XCTAssertEqual(f.verifier.verify(try registration(f, point: offCurve), now: 0).reason, .publicKeyInvalid)
        XCTAssertEqual(f.verifier.verify(try registration(f, backing: "keychain"), now: 0).reason, .backingUnknown)
        XCTAssertEqual(f.verifier.verify(try registration(f, integrity: (0...16).map { "c\($0)" }), now: 0).reason, .integrityInvalid)
        XCTAssertEqual(f.verifier.verify(try registration(f, integrity: ["a", "a"]), now: 0).reason, .integrityInvalid)
        XCTAssertEqual(f.verifier.verify(try registration(f, integrity: ["Jb"]), now: 0).reason, .integrityInvalid)
        XCTAssertEqual(f.verifier.verify(try registration(f, signer: try ECPrivateKey(generatingOn: .p256)), now: 0).reason, .badSignature)
        XCTAssertEqual(f.verifier.verify(try registration(f, signature: [UInt8](repeating: 1, count: 64)), now: 0).reason, .signatureEncoding)
        // A signature over other client data (other codes than those sent).
        let other = DeviceKeyRegistration.clientData(challenge: f.challenge, publicKey: f.deviceKey.publicKeyPoint, backing: "software",
                                                     integrity: ["debugger"])
        XCTAssertEqual(f.verifier.verify(try registration(f, signature: try f.deviceKey.signature(for: other)), now: 0).reason, .badSignature)
        XCTAssertTrue(f.verifier.verify(try registration(f, backing: "secure_enclave"), now: 0).isAccepted)
    }

    func testAttestationOverTheClientDataVouchesAndOverOtherDataSpendsAToken() throws {
        let f = try fixture()
        let appDevice = try SoftwareDevice()
        let data = DeviceKeyRegistration.clientData(challenge: f.challenge, publicKey: f.deviceKey.publicKeyPoint, backing: "software",
                                                    integrity: [])
        let minted = try appDevice.mintAttestation(ca: f.ca, appId: Self.appId, environment: .development, clientDataHash: SHA256.hash(data))
        let now = minted.credentialCertificate.notBefore + 60
        let good = try registration(f, appAttest: .attestation(keyId: appDevice.keyId, object: minted.attestationObject))
        guard case .accepted(let key) = f.verifier.verify(good, now: now) else { return XCTFail("accepted") }
        XCTAssertTrue(key.platformAttested)
        XCTAssertTrue(key.platformTokenSpent)
        XCTAssertEqual(key.appId, Self.appId)
        XCTAssertEqual(key.environment, .development)
        XCTAssertEqual(key.appAttestKeyId, appDevice.keyId)

        let otherHash = SHA256.hash(data + [0])
        let wrong = try appDevice.mintAttestation(ca: f.ca, appId: Self.appId, environment: .development, clientDataHash: otherHash)
        let refused = f.verifier.verify(try registration(f, appAttest: .attestation(keyId: appDevice.keyId, object: wrong.attestationObject)),
                                        now: now)
        guard case .rejected(.nonceMismatch, _, let spent) = refused else { return XCTFail("nonce_mismatch: \(refused)") }
        XCTAssertTrue(spent, "a failed attestation is a spent token")
        // A device-signature failure comes first and spends nothing.
        let badDevice = f.verifier.verify(try registration(f, signer: try ECPrivateKey(generatingOn: .p256),
                                                           appAttest: .attestation(keyId: appDevice.keyId, object: minted.attestationObject)),
                                          now: now)
        guard case .rejected(.badSignature, _, false) = badDevice else { return XCTFail("bad_signature, not spent: \(badDevice)") }
        // Another App Attest keyId than the attested key's.
        let otherKeyId = f.verifier.verify(try registration(f, appAttest: .attestation(keyId: SHA256.hash([1]), object: minted.attestationObject)),
                                           now: now)
        XCTAssertEqual(otherKeyId.reason, .keyIdMismatch)
    }

    func testAssertionOfTheHeldKeyVouchesWithoutSpending() throws {
        let f = try fixture()
        var appDevice = try SoftwareDevice()
        let held = DeviceKeyRegistrationVerifier.HeldKey(publicKey: try P256PublicKey(x963: appDevice.publicKeyPoint),
                                                         app: AppPolicy(appId: Self.appId, environment: .any), environment: .production)
        let data = DeviceKeyRegistration.clientData(challenge: f.challenge, publicKey: f.deviceKey.publicKeyPoint, backing: "software",
                                                    integrity: [])
        let assertion = try appDevice.mintAssertion(appId: Self.appId, clientData: data)
        let request = try registration(f, appAttest: .assertion(keyId: appDevice.keyId, object: assertion.assertionObject))
        guard case .accepted(let key) = f.verifier.verify(request, now: 0, heldKey: held) else { return XCTFail("accepted") }
        XCTAssertTrue(key.platformAttested)
        XCTAssertFalse(key.platformTokenSpent)
        XCTAssertEqual(key.environment, .production)

        XCTAssertEqual(f.verifier.verify(request, now: 0, heldKey: nil).reason, .assertionMalformed, "no held key")
        let otherApp = DeviceKeyRegistrationVerifier.HeldKey(publicKey: held.publicKey, app: AppPolicy(appId: "QQQQQ11111.x.y", environment: .any),
                                                             environment: .production)
        XCTAssertEqual(f.verifier.verify(request, now: 0, heldKey: otherApp).reason, .rpIdMismatch)
        let overOther = try appDevice.mintAssertion(appId: Self.appId, clientData: data + [1])
        let refused = f.verifier.verify(try registration(f, appAttest: .assertion(keyId: appDevice.keyId, object: overOther.assertionObject)),
                                        now: 0, heldKey: held)
        guard case .rejected(.badSignature, _, false) = refused else { return XCTFail("bad_signature without a spent token: \(refused)") }
    }
}
