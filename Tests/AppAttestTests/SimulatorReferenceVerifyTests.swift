import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
import GatewayRules
import XCTest

/// Objects minted by the simulator pass the independent reference verifier
/// (shared/tools/ref_verify.py) pinned to the simulator's test root - and fail `chain` (only
/// `chain`) against Apple's root.
final class SimulatorReferenceVerifyTests: XCTestCase {
    func testAttestationsAndAssertionsPassRefVerify() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ca").path
        let ca = try SimCA.loadOrCreate(directory: caDir)
        let root = caDir + "/root.pem"
        let appleRoot = try SimulatorSupport.toolsDirectory().deletingLastPathComponent()
            .appendingPathComponent("vectors/apple-app-attest-root-ca.pem").path
        var cases = 0
        for environment in AppAttestEnvironment.allCases {
            for ext in [nil, IOS27Extension(bundleVersion: "27.1.4")] {
                let name = "\(environment.rawValue)-\(ext == nil ? "plain" : "ios27")"
                var device = try SoftwareDevice()
                let challenge = try SecureRandom.bytes(count: 32)
                let attestation = try device.mintAttestation(ca: ca, appId: SimulatorSupport.appId, environment: environment,
                                                             challenge: challenge, options: AttestationOptions(ios27Extension: ext))
                XCTAssertEqual(attestation.clientDataHash, SHA256.hash(challenge))
                XCTAssertEqual(attestation.authenticatorData.count, ext == nil ? 164 : 164 + ext!.encoded.count)
                let vector = SimulatorSupport.attestationVector(id: "att-\(name)", minted: attestation, environment: environment,
                                                                challenge: challenge)
                var (status, report) = try SimulatorSupport.refVerify(vector, in: tmp, root: root)
                var results = SimulatorSupport.results(report)
                XCTAssertEqual(status, 0, "\(name): \(report["mismatches"] ?? "")")
                XCTAssertEqual(report["expected_matches"] as? Bool, true)
                XCTAssertTrue(results.count >= 10 && results.values.allSatisfy { $0 }, "\(name): \(results)")

                // Against Apple's real root the same object fails the chain, and nothing else.
                (status, report) = try SimulatorSupport.refVerify(vector, in: tmp, root: appleRoot)
                results = SimulatorSupport.results(report)
                XCTAssertEqual(status, 1)
                XCTAssertEqual(results.filter { !$0.value }.map(\.key), ["chain"], name)

                // Assertions over binding v1 (with a bound field and with an empty body), then raw data.
                let first = try device.mintAssertion(appId: SimulatorSupport.appId, challenge: try SecureRandom.bytes(count: 32),
                                                     method: "POST", target: "/v1/purchases?n=1", body: Array(#"{"sku":"a"}"#.utf8),
                                                     boundFields: [(name: "authorization", value: "Bearer t0k3n")],
                                                     options: AssertionOptions(ios27Extension: ext))
                let second = try device.mintAssertion(appId: SimulatorSupport.appId, challenge: try SecureRandom.bytes(count: 16),
                                                      method: "GET", target: "/v1/items", options: AssertionOptions(ios27Extension: ext))
                let third = try device.mintAssertion(appId: SimulatorSupport.appId, clientData: Array("wurzelpfropf".utf8),
                                                     options: AssertionOptions(counter: 41, ios27Extension: ext))
                XCTAssertEqual([first.counter, second.counter, third.counter], [1, 2, 41])
                for (index, assertion) in [first, second, third].enumerated() {
                    let previous: UInt32 = index == 0 ? 0 : [first, second, third][index - 1].counter
                    let vector = SimulatorSupport.assertionVector(id: "asr-\(name)-\(index)", minted: assertion,
                                                                  publicKeyPoint: device.publicKeyPoint, previousCounter: previous)
                    let (status, report) = try SimulatorSupport.refVerify(vector, in: tmp, root: root)
                    let results = SimulatorSupport.results(report)
                    XCTAssertEqual(status, 0, "\(name) #\(index): \(report["mismatches"] ?? "")")
                    XCTAssertTrue(results.count == 6 && results.values.allSatisfy { $0 }, "\(name) #\(index): \(results)")
                    let info = report["info"] as? [String: Any] ?? [:]
                    XCTAssertEqual(info["signature_also_verifies_if_nonce_treated_as_prehashed_digest"] as? Bool, false)
                    XCTAssertEqual(info["flags_hex"] as? String, "40")
                    cases += 1
                }
            }
        }
        XCTAssertEqual(cases, 12)
    }

    /// Negative cross-check: ref_verify rejects simulator objects verified with wrong inputs.
    func testRefVerifyRejectsWrongInputs() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ca").path
        let ca = try SimCA.loadOrCreate(directory: caDir)
        var device = try SoftwareDevice()
        let challenge = Array("challenge-bytes".utf8)
        let attestation = try device.mintAttestation(ca: ca, appId: SimulatorSupport.appId, environment: .development, challenge: challenge)
        var vector = SimulatorSupport.attestationVector(id: "att-raw-challenge", minted: attestation, environment: .development,
                                                        challenge: challenge)
        vector["clientDataHash"] = SimulatorSupport.b64(challenge)  // the raw challenge is not the convention
        var (status, report) = try SimulatorSupport.refVerify(vector, in: tmp, root: caDir + "/root.pem")
        XCTAssertEqual(status, 1)
        XCTAssertEqual(SimulatorSupport.results(report)["nonce"], false)
        vector = SimulatorSupport.attestationVector(id: "att-wrong-env", minted: attestation, environment: .production, challenge: challenge)
        vector["expected"] = nil
        (_, report) = try SimulatorSupport.refVerify(vector, in: tmp, root: caDir + "/root.pem")
        XCTAssertEqual(SimulatorSupport.results(report)["aaguid"], false)
        XCTAssertEqual(SimulatorSupport.results(report)["chain"], true)

        let assertion = try device.mintAssertion(appId: SimulatorSupport.appId, clientData: Array("data".utf8))
        var asr = SimulatorSupport.assertionVector(id: "asr-tampered", minted: assertion, publicKeyPoint: device.publicKeyPoint)
        asr["clientData"] = SimulatorSupport.b64(Array("dat4".utf8))
        asr["clientDataHash"] = SimulatorSupport.b64(SHA256.hash(Array("dat4".utf8)))
        (status, report) = try SimulatorSupport.refVerify(asr, in: tmp, root: caDir + "/root.pem")
        XCTAssertEqual(status, 1)
        XCTAssertEqual(SimulatorSupport.results(report)["signature"], false)
    }
}
