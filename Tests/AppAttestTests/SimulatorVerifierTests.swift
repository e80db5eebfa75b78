import AppAttest
import AttestCrypto
import AttestSimulator
import GatewayRules
import XCTest

/// Objects minted by the simulator pass our own AttestationVerifier / AssertionVerifier with the
/// test root injected, and tampered variants are refused with the right reason code.
final class SimulatorVerifierTests: XCTestCase {
    static let appId = "ABCDE12345.com.example.gateway-test"

    func testMintedAttestationsAndAssertionsPassOurVerifiers() throws {
        let ca = try SimCA.generate()
        let trust = try ca.trustAnchors()
        for environment in AppAttestEnvironment.allCases {
            for ext in [nil, IOS27Extension(bundleVersion: "42", validationCategory: [1, 0, 0, 0])] {
                let label = "\(environment.rawValue) ios27=\(ext != nil)"
                var device = try SoftwareDevice()
                let challenge = try SecureRandom.bytes(count: 32)
                let minted = try device.mintAttestation(ca: ca, appId: Self.appId, environment: environment, challenge: challenge,
                                                        options: AttestationOptions(ios27Extension: ext))
                let policy = EnvironmentPolicy(rawValue: environment.rawValue)!
                let verifier = AttestationVerifier(trust: trust, apps: [AppPolicy(appId: Self.appId, environment: policy)])
                let now = minted.credentialCertificate.notBefore + 1800
                let decision = verifier.verify(attestationObject: minted.attestationObject, keyId: device.keyId,
                                               clientDataHash: SHA256.hash(challenge), now: now)
                guard let key = decision.attestedKey else {
                    XCTFail("\(label): \(decision.reason?.rawValue ?? "") \(decision.detail)")
                    continue
                }
                XCTAssertEqual(key.keyId, device.keyId, label)
                XCTAssertEqual(key.publicKeyPoint, device.publicKeyPoint, label)
                XCTAssertEqual(key.environment, environment, label)
                XCTAssertEqual(key.appId, Self.appId, label)
                XCTAssertEqual(key.counter, 0, label)
                XCTAssertEqual(key.signals?.bundleVersion, ext?.bundleVersion, label)
                XCTAssertEqual(key.signals?.validationCategory, ext?.validationCategory, label)
                XCTAssertEqual(key.receipt, AttestationOptions.placeholderReceipt, label)
                XCTAssertEqual(key.certificateNotAfter, minted.credentialCertificate.notAfter, label)
                // The default leaf validity (now - 1 h .. now + 3 days) also passes at the current time.
                XCTAssertTrue(verifier.verify(attestationObject: minted.attestationObject, keyId: device.keyId,
                                              clientDataHash: minted.clientDataHash, now: Int64(Date().timeIntervalSince1970)).isAccepted)

                var previous: UInt32 = 0
                for n in 1...3 {
                    let challenge = try SecureRandom.bytes(count: 32)
                    let body = Array("{\"n\":\(n)}".utf8)
                    let assertion = try device.mintAssertion(appId: Self.appId, challenge: challenge, method: "POST",
                                                             target: "/v1/purchases?n=\(n)", body: body,
                                                             options: AssertionOptions(ios27Extension: ext))
                    let clientData = try ClientDataBinding.v1(challenge: challenge, method: "POST", target: "/v1/purchases?n=\(n)",
                                                              bodySHA256: SHA256.hash(body))
                    XCTAssertEqual(assertion.clientData, clientData)
                    let verdict = AssertionVerifier.verify(assertionObject: assertion.assertionObject, publicKey: key.publicKey,
                                                           appId: Self.appId, clientData: clientData, previousCounter: previous)
                    XCTAssertTrue(verdict.isAccepted, "\(label) #\(n): \(verdict.reason?.rawValue ?? "")")
                    XCTAssertEqual(verdict.counter, UInt32(n))
                    if case .accepted(let verified) = verdict {
                        XCTAssertEqual(verified.flags, 0x40)
                        XCTAssertEqual(verified.signals?.bundleVersion, ext?.bundleVersion)
                    }
                    previous = UInt32(n)
                }
                XCTAssertEqual(device.counter, 3)
            }
        }
    }

    func testTamperedAttestationsAreRefusedWithTheRightReason() throws {
        let ca = try SimCA.generate()
        let trust = try ca.trustAnchors()
        let device = try SoftwareDevice()
        let challenge = Array("server challenge".utf8)
        let minted = try device.mintAttestation(ca: ca, appId: Self.appId, environment: .development, challenge: challenge,
                                                options: AttestationOptions(notBefore: 1_800_000_000, leafLifetime: 86_400))
        XCTAssertEqual(minted.credentialCertificate.notBefore, 1_800_000_000)
        XCTAssertEqual(minted.credentialCertificate.notAfter, 1_800_086_400)
        let now: Int64 = 1_800_000_600
        let dev = AttestationVerifier(trust: trust, apps: [AppPolicy(appId: Self.appId, environment: .development)])
        func reason(_ verifier: AttestationVerifier = dev, keyId: [UInt8]? = nil, clientDataHash: [UInt8]? = nil, at: Int64 = now) -> ReasonCode? {
            let decision = verifier.verify(attestationObject: minted.attestationObject, keyId: keyId ?? device.keyId,
                                           clientDataHash: clientDataHash ?? SHA256.hash(challenge), now: at)
            return decision.isAccepted ? nil : decision.reason
        }
        XCTAssertNil(reason())
        XCTAssertEqual(reason(AttestationVerifier(trust: .apple, apps: dev.apps)), .chainInvalid)  // Apple's root only
        XCTAssertEqual(reason(at: 1_800_086_400 + 60), .chainInvalid)
        XCTAssertEqual(reason(at: 1_800_000_000 - 60), .chainInvalid)
        XCTAssertEqual(reason(clientDataHash: challenge), .nonceMismatch)          // raw challenge instead of its hash
        XCTAssertEqual(reason(clientDataHash: SHA256.hash(SHA256.hash(challenge))), .nonceMismatch)
        XCTAssertEqual(reason(keyId: try SecureRandom.bytes(count: 32)), .keyIdMismatch)
        XCTAssertEqual(reason(AttestationVerifier(trust: trust, apps: [AppPolicy(appId: "ZZZZZZZZZZ.com.example.gateway-test", environment: .any)])),
                       .rpIdMismatch)
        XCTAssertEqual(reason(AttestationVerifier(trust: trust, apps: [AppPolicy(appId: Self.appId, environment: .production)])),
                       .envMismatch)
        // A certificate from another test CA does not chain to this root.
        let other = try SimCA.generate()
        let foreign = try device.mintAttestation(ca: other, appId: Self.appId, environment: .development, challenge: challenge,
                                                 options: AttestationOptions(notBefore: 1_800_000_000))
        XCTAssertEqual(dev.verify(attestationObject: foreign.attestationObject, keyId: device.keyId,
                                  clientDataHash: SHA256.hash(challenge), now: now).reason, .chainInvalid)
    }

    func testTamperedAssertionsAreRefusedWithTheRightReason() throws {
        var device = try SoftwareDevice()
        var stranger = try SoftwareDevice()
        let challenge = try SecureRandom.bytes(count: 32)
        func clientData(_ target: String) throws -> [UInt8] {
            try ClientDataBinding.v1(challenge: challenge, method: "POST", target: target, bodySHA256: SHA256.hash(Array("{}".utf8)))
        }
        func verify(_ assertion: SimAssertion, clientData data: [UInt8]? = nil, appId: String = Self.appId,
                    previous: UInt32? = 0) -> AssertionDecision {
            AssertionVerifier.verify(assertionObject: assertion.assertionObject, publicKey: device.publicKey, appId: appId,
                                     clientData: data ?? assertion.clientData, previousCounter: previous)
        }
        let good = try device.mintAssertion(appId: Self.appId, challenge: challenge, method: "POST", target: "/v1/a", body: Array("{}".utf8),
                                            options: AssertionOptions(counter: 5))
        XCTAssertTrue(verify(good).isAccepted)
        XCTAssertEqual(device.counter, 5)

        // Signed with another key.
        let foreign = try stranger.mintAssertion(appId: Self.appId, clientData: good.clientData, options: AssertionOptions(counter: 6))
        XCTAssertEqual(verify(foreign).reason, .badSignature)
        // Over other client data (the gateway rebuilt another target / another body).
        XCTAssertEqual(verify(good, clientData: try clientData("/v1/a?x=1")).reason, .badSignature)
        XCTAssertEqual(verify(good, clientData: try ClientDataBinding.v1(challenge: challenge, method: "POST", target: "/v1/a",
                                                                         bodySHA256: SHA256.hash(Array("{ }".utf8)))).reason, .badSignature)
        // Signed for another app.
        let otherApp = try device.mintAssertion(appId: "ZZZZZZZZZZ.com.example.gateway-test", clientData: good.clientData)
        XCTAssertEqual(otherApp.counter, 6)
        XCTAssertEqual(verify(otherApp, previous: 5).reason, .rpIdMismatch)
        XCTAssertEqual(verify(good, appId: "ZZZZZZZZZZ.com.example.gateway-test").reason, .rpIdMismatch)
        // Counter 0 after a higher counter, and the same counter again (replay).
        let zero = try device.mintAssertion(appId: Self.appId, clientData: good.clientData, options: AssertionOptions(counter: 0))
        XCTAssertEqual(zero.counter, 0)
        XCTAssertEqual(device.counter, 6, "an explicit lower counter does not rewind the device")
        XCTAssertTrue(verify(zero, previous: nil).isAccepted, "the signature itself is valid")
        XCTAssertEqual(verify(zero, previous: 5).reason, .counterReplay)
        XCTAssertEqual(verify(good, previous: 5).reason, .counterReplay)
        // The device counter continues above the highest counter used.
        let next = try device.mintAssertion(appId: Self.appId, clientData: good.clientData)
        XCTAssertEqual(next.counter, 7)
        XCTAssertTrue(verify(next, previous: 5).isAccepted)
        // Counter exhaustion is an error, not an overflow trap.
        var exhausted = try SoftwareDevice(privateKey: device.privateKey, counter: UInt32.max)
        XCTAssertThrowsError(try exhausted.mintAssertion(appId: Self.appId, clientData: []))
        XCTAssertEqual(try exhausted.mintAssertion(appId: Self.appId, clientData: [], options: AssertionOptions(counter: 9)).counter, 9)
    }
}
