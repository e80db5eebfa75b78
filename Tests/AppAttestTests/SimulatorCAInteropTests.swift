import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
import XCTest

/// The test CA and device key files are interchangeable with shared/tools/ref_device.py: a CA made
/// by either tool mints objects with the other that both verifiers accept.
final class SimulatorCAInteropTests: XCTestCase {
    let appId = SimulatorSupport.appId

    func testRefDeviceCALoadsAndMintsObjectsBothVerifiersAccept() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ref-ca").path
        let created = try SimulatorSupport.refDeviceCLI(["ca", "--out", caDir])
        XCTAssertEqual(created["intermediate"] as? String, "ST=California,O=TEST App Attest CA (not Apple),CN=TEST App Attestation CA 1")

        let ca = try SimCA.load(directory: caDir)
        XCTAssertEqual(ca.root.subject, created["root"] as? String)
        XCTAssertEqual(ca.intermediate.subject, created["intermediate"] as? String)
        let loaded = try SimCA.loadOrCreate(directory: caDir)  // reuses, never overwrites
        XCTAssertEqual(loaded.root.derBytes, ca.root.derBytes)

        var device = try SoftwareDevice()
        let challenge = try SecureRandom.bytes(count: 32)
        let minted = try device.mintAttestation(ca: ca, appId: appId, environment: .production, challenge: challenge,
                                                options: AttestationOptions(ios27Extension: IOS27Extension(bundleVersion: "7")))
        let verifier = AttestationVerifier(trust: try ca.trustAnchors(), apps: [AppPolicy(appId: appId, environment: .production)])
        let decision = verifier.verify(attestationObject: minted.attestationObject, keyId: device.keyId,
                                       clientDataHash: SHA256.hash(challenge), now: minted.credentialCertificate.notBefore + 60)
        XCTAssertTrue(decision.isAccepted, "\(decision.reason?.rawValue ?? "") \(decision.detail)")
        let vector = SimulatorSupport.attestationVector(id: "refca", minted: minted, environment: .production, challenge: challenge)
        let (status, report) = try SimulatorSupport.refVerify(vector, in: tmp, root: caDir + "/root.pem")
        XCTAssertEqual(status, 0, "\(report["mismatches"] ?? "")")
        XCTAssertTrue(SimulatorSupport.results(report).values.allSatisfy { $0 })

        let assertion = try device.mintAssertion(appId: appId, clientData: Array("x".utf8))
        XCTAssertTrue(AssertionVerifier.verify(assertionObject: assertion.assertionObject, publicKey: device.publicKey, appId: appId,
                                               clientData: Array("x".utf8), previousCounter: 0).isAccepted)
    }

    func testOurCAAndKeyFilesWorkWithRefDevice() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("our-ca").path
        let ca = try SimCA.loadOrCreate(directory: caDir)
        for name in SimCA.fileNames {
            let mode = try XCTUnwrap(FileManager.default.attributesOfItem(atPath: caDir + "/" + name)[.posixPermissions] as? Int)
            XCTAssertEqual(mode, name.hasSuffix(".key.pem") ? 0o600 : 0o644, name)
        }
        let keyFile = tmp.appendingPathComponent("device.key").path
        let device = try SoftwareDevice()
        try device.save(to: keyFile)
        XCTAssertEqual(try FileManager.default.attributesOfItem(atPath: keyFile)[.posixPermissions] as? Int, 0o600)
        XCTAssertThrowsError(try device.save(to: keyFile), "an existing key file is never replaced silently")

        // ref_device.py mints with our CA folder and our key file.
        let challenge = try SecureRandom.bytes(count: 32)
        let out = try SimulatorSupport.refDeviceCLI(["attest", "--ca", caDir, "--key", keyFile, "--app-id", appId,
                                                     "--env", "development", "--challenge", SimulatorSupport.b64(challenge),
                                                     "--ios27-ext", "3"])
        XCTAssertEqual(try SimulatorSupport.unb64(out["keyId"]), device.keyId)
        let attestation = try SimulatorSupport.unb64(out["attestation"])
        let verifier = AttestationVerifier(trust: try ca.trustAnchors(), apps: [AppPolicy(appId: appId, environment: .development)])
        let decision = verifier.verify(attestationObject: attestation, keyId: device.keyId, clientDataHash: SHA256.hash(challenge),
                                       now: Int64(Date().timeIntervalSince1970))
        XCTAssertTrue(decision.isAccepted, "\(decision.reason?.rawValue ?? "") \(decision.detail)")
        XCTAssertEqual(decision.attestedKey?.signals?.bundleVersion, "3")

        let asserted = try SimulatorSupport.refDeviceCLI(["assert", "--key", keyFile, "--app-id", appId, "--counter", "9",
                                                          "--challenge", SimulatorSupport.b64(challenge), "--method", "DELETE",
                                                          "--target", "/v1/items/7"])
        let clientData = try ClientDataBinding.v1(challenge: challenge, method: "DELETE", target: "/v1/items/7",
                                                  bodySHA256: ClientDataBinding.emptyBodySHA256)
        XCTAssertEqual(try SimulatorSupport.unb64(asserted["clientData"]), clientData)
        let verdict = AssertionVerifier.verify(assertionObject: try SimulatorSupport.unb64(asserted["assertion"]), publicKey: device.publicKey,
                                               appId: appId, clientData: clientData, previousCounter: 8)
        XCTAssertEqual(verdict.counter, 9)
    }

    func testRefDeviceKeyFileLoads() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let keyFile = tmp.appendingPathComponent("ref.key").path
        let out = try SimulatorSupport.refDeviceCLI(["keygen", "--out", keyFile])
        var device = try SoftwareDevice.load(from: keyFile)
        XCTAssertEqual(SimulatorSupport.b64(device.keyId), out["keyId"] as? String)
        let assertion = try device.mintAssertion(appId: appId, clientData: [1, 2, 3])
        XCTAssertTrue(AssertionVerifier.verify(assertionObject: assertion.assertionObject, publicKey: device.publicKey, appId: appId,
                                               clientData: [1, 2, 3], previousCounter: 0).isAccepted)
    }

    func testIncompleteOrInconsistentCAFoldersAreRefused() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ca").path
        _ = try SimCA.loadOrCreate(directory: caDir)
        let rootPEM = try String(contentsOfFile: caDir + "/root.pem", encoding: .utf8)

        // Missing one file: named in the error, nothing is recreated or overwritten.
        try FileManager.default.removeItem(atPath: caDir + "/intermediate.key.pem")
        XCTAssertThrowsError(try SimCA.loadOrCreate(directory: caDir)) { error in
            XCTAssertEqual(error as? SimulatorError, .incompleteCA(directory: caDir, missing: ["intermediate.key.pem"]))
        }
        XCTAssertEqual(try String(contentsOfFile: caDir + "/root.pem", encoding: .utf8), rootPEM)
        XCTAssertFalse(FileManager.default.fileExists(atPath: caDir + "/intermediate.key.pem"))
        XCTAssertThrowsError(try SimCA.load(directory: tmp.appendingPathComponent("nothing").path))

        // A key that does not belong to its certificate.
        try FileManager.default.copyItem(atPath: caDir + "/root.key.pem", toPath: caDir + "/intermediate.key.pem")
        XCTAssertThrowsError(try SimCA.load(directory: caDir)) { error in
            guard case .invalidCA = error as? SimulatorError else { return XCTFail("\(error)") }
        }
        // An intermediate from another CA.
        let other = tmp.appendingPathComponent("other").path
        _ = try SimCA.loadOrCreate(directory: other)
        try FileManager.default.removeItem(atPath: caDir + "/intermediate.key.pem")
        try FileManager.default.removeItem(atPath: caDir + "/intermediate.pem")
        try FileManager.default.copyItem(atPath: other + "/intermediate.key.pem", toPath: caDir + "/intermediate.key.pem")
        try FileManager.default.copyItem(atPath: other + "/intermediate.pem", toPath: caDir + "/intermediate.pem")
        XCTAssertThrowsError(try SimCA.load(directory: caDir)) { error in
            guard case .invalidCA(let detail) = error as? SimulatorError else { return XCTFail("\(error)") }
            XCTAssertTrue(detail.contains("does not verify under the root"), detail)
        }
        // Garbage in a key file, and a P-384 key used as a device key.
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: caDir + "/junk.pem"))
        XCTAssertThrowsError(try SoftwareDevice.load(from: caDir + "/junk.pem"))
        XCTAssertThrowsError(try SoftwareDevice.load(from: caDir + "/root.key.pem")) { error in
            guard case .invalidKey = error as? SimulatorError else { return XCTFail("\(error)") }
        }
    }
}
