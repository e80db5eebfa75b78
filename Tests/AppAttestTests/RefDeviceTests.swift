@testable import AppAttest
import AttestCrypto
import Foundation
import GatewayTestSupport
import XCTest

/// Objects minted by the independent reference device (../shared/tools/ref_device.py) under its test
/// CA pass our verifier with that root injected; its client-data binding v1 equals ours.
final class RefDeviceTests: XCTestCase {
    let appId = "ABCDE12345.com.example.gateway-test"

    struct Device {
        let tool: String
        let directory: URL
        var caDirectory: URL { directory.appendingPathComponent("ca") }
        var keyFile: URL { directory.appendingPathComponent("device.key.pem") }

        func run(_ arguments: [String]) throws -> [String: Any] {
            let result = try ChildProcess.run("python3", [tool] + arguments)
            guard result.status == 0 else { throw SetupFailure("ref_device.py \(arguments.first ?? "") failed: \(result.output)") }
            return try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], result.output)
        }
    }

    func makeDevice() throws -> Device {
        guard let tools = SharedFixtures.toolsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ref-device-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        let device = Device(tool: tools.appendingPathComponent("ref_device.py").path, directory: dir)
        _ = try device.run(["ca", "--out", device.caDirectory.path])
        _ = try device.run(["keygen", "--out", device.keyFile.path])
        return device
    }

    func b64(_ any: Any?) throws -> [UInt8] { try XCTUnwrap((any as? String).flatMap(Base64.decode)) }

    func testRefDeviceAttestationsAndAssertionsPass() throws {
        let device = try makeDevice()
        defer { try? FileManager.default.removeItem(at: device.directory) }
        let root = try X509Certificate(pem: String(contentsOf: device.caDirectory.appendingPathComponent("root.pem"), encoding: .utf8))
        let trust = try TrustAnchors.apple.adding(appAttestRoots: [root])
        let challenge = try SecureRandom.bytes(count: 32)
        for (environment, ios27) in [("development", nil), ("production", "27.1")] as [(String, String?)] {
            var arguments = ["attest", "--ca", device.caDirectory.path, "--key", device.keyFile.path, "--app-id", appId, "--env", environment,
                             "--challenge", Base64.encode(challenge)]
            if let ios27 { arguments += ["--ios27-ext", ios27] }
            let minted = try device.run(arguments)
            let keyId = try b64(minted["keyId"])
            let clientDataHash = try b64(minted["clientDataHash"])
            XCTAssertEqual(clientDataHash, SHA256.hash(challenge))
            let verifier = AttestationVerifier(trust: trust, apps: [AppPolicy(appId: appId, environment: .any)])
            let now = Int64(Date().timeIntervalSince1970)
            let decision = verifier.verify(attestationObject: try b64(minted["attestation"]), keyId: keyId, clientDataHash: clientDataHash, now: now)
            let key = try XCTUnwrap(decision.attestedKey, "\(environment): \(decision.reason?.rawValue ?? "") \(decision.detail)")
            XCTAssertEqual(key.environment.rawValue, environment)
            XCTAssertEqual(key.signals?.bundleVersion, ios27)
            if ios27 != nil { XCTAssertEqual(key.signals?.validationCategory, [3, 0, 0, 0]) }
            // Not with Apple's anchors alone.
            XCTAssertEqual(AttestationVerifier(apps: verifier.apps).verify(attestationObject: try b64(minted["attestation"]), keyId: keyId,
                                                                             clientDataHash: clientDataHash, now: now).reason, .chainInvalid)

            // Assertions over binding v1, with and without the iOS 27 map and bound fields.
            let body = "{\"amount\": 12}"
            var assertArguments = ["assert", "--key", device.keyFile.path, "--app-id", appId, "--counter", "1", "--challenge", Base64.encode(challenge),
                                   "--method", "POST", "--target", "/v1/pay?x=1&y=%2F", "--body", body,
                                   "--extra-field", "authorization:Bearer abc", "--extra-field", "x-request-id:42"]
            if let ios27 { assertArguments += ["--ios27-ext", ios27] }
            let assertion = try device.run(assertArguments)
            let clientData = try ClientDataBinding.v1(challenge: challenge, method: "POST", target: "/v1/pay?x=1&y=%2F",
                                                      bodySHA256: SHA256.hash(Array(body.utf8)),
                                                      boundFields: [("authorization", "Bearer abc"), ("x-request-id", "42")])
            XCTAssertEqual(clientData, try b64(assertion["clientData"]), "binding v1 differs from ref_device.py client_data_v1")
            let result = AssertionVerifier.verify(assertionObject: try b64(assertion["assertion"]), publicKey: key.publicKey, appId: appId,
                                                  clientData: clientData, previousCounter: 0)
            XCTAssertEqual(result.counter, 1, "\(String(describing: result.reason))")
            if case .accepted(let verified) = result { XCTAssertEqual(verified.signals?.bundleVersion, ios27) }
            // Replaying it fails; a different target fails.
            XCTAssertEqual(AssertionVerifier.verify(assertionObject: try b64(assertion["assertion"]), publicKey: key.publicKey, appId: appId,
                                                    clientData: clientData, previousCounter: 1).reason, .counterReplay)
            let otherTarget = try ClientDataBinding.v1(challenge: challenge, method: "POST", target: "/v1/pay?x=2", bodySHA256: SHA256.hash(Array(body.utf8)),
                                                       boundFields: [("authorization", "Bearer abc"), ("x-request-id", "42")])
            XCTAssertEqual(AssertionVerifier.verify(assertionObject: try b64(assertion["assertion"]), publicKey: key.publicKey, appId: appId,
                                                    clientData: otherTarget, previousCounter: 0).reason, .badSignature)
        }
    }

    func testClientDataBindingMatchesReference() throws {
        guard let tools = SharedFixtures.toolsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let script = """
        import base64, sys
        sys.path.insert(0, sys.argv[1]); sys.dont_write_bytecode = True
        import ref_device
        cd = ref_device.client_data_v1(bytes(range(32)), "GET", "/", b"", [])
        cd2 = ref_device.client_data_v1(b"\\x00\\xff", "DELETE", "/a/b?c=%C3%A9", "é".encode(), ["a:b", "Authorization:Bearer x:y"])
        print(base64.b64encode(cd).decode()); print(base64.b64encode(cd2).decode())
        """
        let run = try ChildProcess.run("python3", ["-c", script, tools.path])
        XCTAssertEqual(run.status, 0, run.output)
        let lines = run.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 2, run.output)
        let ours1 = try ClientDataBinding.v1(challenge: Array(0..<32), method: "GET", target: "/", bodySHA256: ClientDataBinding.emptyBodySHA256)
        let ours2 = try ClientDataBinding.v1(challenge: [0x00, 0xFF], method: Array("DELETE".utf8), target: Array("/a/b?c=%C3%A9".utf8),
                                             bodySHA256: SHA256.hash(Array("é".utf8)),
                                             boundFields: [Array("a:b".utf8), ClientDataBinding.boundField(name: Array("Authorization".utf8), value: Array("Bearer x:y".utf8))])
        XCTAssertEqual(Base64.encode(ours1), lines.first)
        XCTAssertEqual(Base64.encode(ours2), lines.last)
        XCTAssertEqual(ClientDataBinding.emptyBodySHA256, SHA256.hash([]))
        XCTAssertEqual(Array(ours1.prefix(4)), [0, 0, 0, 32])
        XCTAssertThrowsError(try ClientDataBinding.v1(challenge: [], method: "GET", target: "/", bodySHA256: [1, 2, 3]))
    }
}
