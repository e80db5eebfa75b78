import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
import GatewayTestSupport
import XCTest

/// The attestctl device subcommands (ca, keygen, attest, assert, assert-raw, simulate) run as real
/// processes: output shapes equal ref_device.py's, objects pass ref_verify.py and our verifiers,
/// and `simulate` plays the client side against a fake gateway that verifies with the reference code.
final class SimulatorCommandTests: XCTestCase {
    let appId = SimulatorSupport.appId

    /// The built attestctl binary (built with the tests by `swift build --build-tests` / `swift test`).
    func attestctlPath() throws -> String { try BuiltProducts.executable("attestctl") }

    func attestctl(_ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        try SimulatorSupport.run(try attestctlPath(), arguments)
    }

    func attestctlJSON(_ arguments: [String]) throws -> [String: Any] {
        let result = try attestctl(arguments)
        guard result.status == 0 else { throw SimulatorTestError("attestctl \(arguments.first ?? "") exited \(result.status): \(result.stderr)") }
        return try SimulatorSupport.jsonObject(result.stdout)
    }

    /// Top-level keys of a JSON object text, in order.
    func keys(_ text: String) throws -> [String] {
        try SimulatorSupport.python("d = json.loads(sys.stdin.read()) if False else json.loads(sys.argv[1])\nprint(json.dumps({'keys': list(d)}))",
                                    [text])["keys"] as? [String] ?? []
    }

    func testDeviceSubcommandsMatchRefDeviceShapesAndVerify() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ca").path, keyFile = tmp.appendingPathComponent("device.key").path
        let refDevice = try SimulatorSupport.refDevice()

        let ca = try attestctl(["ca", "--out", caDir])
        XCTAssertEqual(ca.status, 0, ca.stderr)
        let again = try attestctl(["ca", "--out", caDir])
        XCTAssertEqual(again.stdout, ca.stdout, "the second call reuses the CA")
        let refCA = try SimulatorSupport.run("python3", [refDevice, "ca", "--out", caDir])  // ref_device.py reads our folder
        XCTAssertEqual(refCA.status, 0, refCA.stderr)
        XCTAssertEqual(try SimulatorSupport.jsonObject(ca.stdout) as NSDictionary, try SimulatorSupport.jsonObject(refCA.stdout) as NSDictionary)
        XCTAssertEqual(try keys(ca.stdout), try keys(refCA.stdout))

        let keygen = try attestctlJSON(["keygen", "--out", keyFile])
        XCTAssertEqual(Array(keygen.keys), ["keyId"])
        XCTAssertEqual(try attestctl(["keygen", "--out", keyFile]).status, 1, "an existing key is not replaced without --force")
        let device = try SoftwareDevice.load(from: keyFile)
        XCTAssertEqual(keygen["keyId"] as? String, SimulatorSupport.b64(device.keyId))

        // attest: same shape as ref_device.py, passes ref_verify.py and our verifier.
        let challenge = try SecureRandom.bytes(count: 32)
        let attestArgs = ["attest", "--ca", caDir, "--key", keyFile, "--app-id", appId, "--env", "production",
                          "--challenge", SimulatorSupport.b64(challenge), "--ios27-ext", "12", "--leaf-days", "1",
                          "--not-before", "2026-01-02T03:04:05Z"]
        let attest = try attestctl(attestArgs)
        XCTAssertEqual(attest.status, 0, attest.stderr)
        let refAttest = try SimulatorSupport.run("python3", [refDevice] + attestArgs)
        XCTAssertEqual(try keys(attest.stdout), try keys(refAttest.stdout))
        let out = try SimulatorSupport.jsonObject(attest.stdout)
        let refOut = try SimulatorSupport.jsonObject(refAttest.stdout)
        XCTAssertEqual(out["keyId"] as? String, refOut["keyId"] as? String)
        XCTAssertEqual(out["clientDataHash"] as? String, SimulatorSupport.b64(SHA256.hash(challenge)))
        let attestation = try SimulatorSupport.unb64(out["attestation"])
        let refAttestation = try SimulatorSupport.unb64(refOut["attestation"])
        XCTAssertEqual(try CBORDecoder().decode(attestation)["authData"], try CBORDecoder().decode(refAttestation)["authData"],
                       "same key, app, environment and iOS 27 version: identical authenticatorData")
        let leaf = try X509Certificate(der: try XCTUnwrap(try CBORDecoder().decode(attestation)["attStmt"]?["x5c"]?.arrayValue?.first?.bytesValue))
        XCTAssertEqual(CivilTime.iso8601(leaf.notBefore), "2026-01-02T03:04:05Z")
        XCTAssertEqual(CivilTime.iso8601(leaf.notAfter), "2026-01-03T03:04:05Z")
        let verifier = AttestationVerifier(trust: try SimCA.load(directory: caDir).trustAnchors(),
                                           apps: [AppPolicy(appId: appId, environment: .production)])
        let decision = verifier.verify(attestationObject: attestation, keyId: device.keyId, clientDataHash: SHA256.hash(challenge),
                                       now: leaf.notBefore + 600)
        XCTAssertTrue(decision.isAccepted, "\(decision.reason?.rawValue ?? "") \(decision.detail)")
        var vector: [String: Any] = [
            "kind": "attestation", "id": "cli-attest", "attestationObject": SimulatorSupport.b64(attestation),
            "keyId": SimulatorSupport.b64(device.keyId), "teamId": SimulatorSupport.teamId, "bundleId": SimulatorSupport.bundleId,
            "environment": "production", "clientDataHash": SimulatorSupport.b64(SHA256.hash(challenge)),
            "validationTime": "2026-01-02T12:00:00Z",
        ]
        vector["expected"] = ["chain": true, "nonce": true, "keyId": true, "rpIdHash": true, "aaguid": true, "credentialId": true]
        let (status, report) = try SimulatorSupport.refVerify(vector, in: tmp, root: caDir + "/root.pem")
        XCTAssertEqual(status, 0, "\(report["mismatches"] ?? "")")
        XCTAssertTrue(SimulatorSupport.results(report).values.allSatisfy { $0 })

        // assert: identical client data and authenticatorData to ref_device.py for the same inputs.
        let bodyFile = tmp.appendingPathComponent("body.bin")
        try Data([0, 98, 105, 110, 0xFF]).write(to: bodyFile)
        let assertArgs = ["--key", keyFile, "--app-id", appId, "--counter", "3", "--challenge", SimulatorSupport.b64(challenge),
                          "--method", "PUT", "--target", "/a?b=c", "--body-file", bodyFile.path, "--ios27-ext", "12"]
        let assert = try attestctl(["assert"] + assertArgs + ["--bind", "x-one:1", "--bind", "authorization:Bearer a:b"])
        XCTAssertEqual(assert.status, 0, assert.stderr)
        let refAssert = try SimulatorSupport.run("python3", [refDevice, "assert"] + assertArgs
                                                     + ["--extra-field", "x-one:1", "--extra-field", "authorization:Bearer a:b"])
        XCTAssertEqual(refAssert.status, 0, refAssert.stderr)
        XCTAssertEqual(try keys(assert.stdout), try keys(refAssert.stdout))
        let asr = try SimulatorSupport.jsonObject(assert.stdout), refAsr = try SimulatorSupport.jsonObject(refAssert.stdout)
        XCTAssertEqual(asr["clientData"] as? String, refAsr["clientData"] as? String)
        XCTAssertEqual(asr["counter"] as? Int, 3)
        let ours = try CBORDecoder().decode(try SimulatorSupport.unb64(asr["assertion"]))
        let theirs = try CBORDecoder().decode(try SimulatorSupport.unb64(refAsr["assertion"]))
        XCTAssertEqual(ours["authenticatorData"], theirs["authenticatorData"])
        let clientData = try SimulatorSupport.unb64(asr["clientData"])
        XCTAssertEqual(clientData, try ClientDataBinding.v1(challenge: challenge, method: "PUT", target: "/a?b=c",
                                                            bodySHA256: SHA256.hash([0, 98, 105, 110, 0xFF]),
                                                            boundFields: [(name: "x-one", value: "1"), (name: "authorization", value: "Bearer a:b")]))
        for output in [asr, refAsr] {
            let verdict = AssertionVerifier.verify(assertionObject: try SimulatorSupport.unb64(output["assertion"]), publicKey: device.publicKey,
                                                   appId: appId, clientData: clientData, previousCounter: 2)
            XCTAssertEqual(verdict.counter, 3)
        }

        // assert-raw, and usage errors.
        let raw = try attestctlJSON(["assert-raw", "--key", keyFile, "--app-id", appId, "--counter", "4",
                                     "--client-data-b64", SimulatorSupport.b64(Array("anything".utf8))])
        XCTAssertEqual(try SimulatorSupport.unb64(raw["clientData"]), Array("anything".utf8))
        XCTAssertTrue(AssertionVerifier.verify(assertionObject: try SimulatorSupport.unb64(raw["assertion"]), publicKey: device.publicKey,
                                               appId: appId, clientData: Array("anything".utf8), previousCounter: 3).isAccepted)
        XCTAssertEqual(try attestctl(["assert", "--key", keyFile]).status, 2)
        XCTAssertEqual(try attestctl(["assert"] + assertArgs + ["--body", "x"]).status, 2, "--body and --body-file are exclusive")
        XCTAssertEqual(try attestctl(["attest", "--ca", caDir, "--key", keyFile, "--app-id", appId, "--env", "staging",
                                      "--challenge", "AAAA"]).status, 2)
        XCTAssertEqual(try attestctl(["assert-raw", "--key", keyFile, "--app-id", appId, "--counter", "4294967296",
                                      "--client-data-b64", "AA=="]).status, 2)
        let missingCA = try attestctl(["attest", "--ca", tmp.appendingPathComponent("none").path, "--key", keyFile, "--app-id", appId,
                                       "--env", "development", "--challenge", "AAAA"])
        XCTAssertEqual(missingCA.status, 1)
        XCTAssertTrue(missingCA.stderr.contains("no complete test CA"), missingCA.stderr)
    }

    func testSimulateAgainstAFakeGateway() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ca").path
        _ = try SimCA.loadOrCreate(directory: caDir)
        let gateway = try SimulatorFakeGateway(root: caDir + "/root.pem", appId: appId, directory: tmp)
        defer { gateway.stop() }
        let keyFile = tmp.appendingPathComponent("sim.key").path
        let run = try attestctl(["simulate", "--gateway", gateway.url, "--app-id", appId, "--ca", caDir, "--requests", "4",
                                 "--ios27-ext", "27.0", "--key", keyFile])
        XCTAssertEqual(run.status, 0, run.stdout + run.stderr + gateway.process.output)
        XCTAssertTrue(run.stdout.contains("summary: PASS - attestation 201, protected requests 4/4 accepted, replay 401 refused (challenge_unknown)"),
                      run.stdout)
        XCTAssertTrue(run.stdout.contains("== step 2: attestation"))
        XCTAssertTrue(run.stdout.contains("\"environment\": \"development\"\n}\n-> ok"), run.stdout)  // after 100 Continue, byte by byte
        XCTAssertTrue(run.stdout.contains("< App-Attest-Verdict: valid"))
        XCTAssertTrue(run.stdout.contains("\"target\": \"/v1/purchases?n=4\""), run.stdout)
        XCTAssertTrue(run.stdout.contains("< App-Attest-Error: challenge_unknown"))
        XCTAssertTrue(run.stdout.contains("key file \(keyFile) (created)"))
        let events = gateway.events
        XCTAssertEqual(events.filter { $0.hasPrefix("attested ") }.count, 1, "\(events)")
        XCTAssertEqual(events.filter { $0.hasPrefix("assert ok") },
                       (1...4).map { "assert ok counter=\($0) target=/v1/purchases?n=\($0)" })
        XCTAssertEqual(events.filter { $0.hasPrefix("refused") }, ["refused 401 challenge_unknown"])

        // The key file is reused by a second run (re-attestation of the same keyId), GET without bodies.
        let second = try attestctl(["simulate", "--gateway", gateway.url + "/", "--app-id", appId, "--ca", caDir, "--requests", "1",
                                    "--key", keyFile, "--method", "GET"])
        XCTAssertEqual(second.status, 0, second.stdout)
        XCTAssertTrue(second.stdout.contains("key file \(keyFile) (reused)"))
        let device = try SoftwareDevice.load(from: keyFile)
        XCTAssertTrue(second.stdout.contains("device keyId \(SimulatorSupport.b64(device.keyId))"))
        XCTAssertTrue(second.stdout.contains("\"method\": \"GET\""), second.stdout)
    }

    func testSimulateBindsHeadersTheRouteBinds() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ca").path
        _ = try SimCA.loadOrCreate(directory: caDir)
        let gateway = try SimulatorFakeGateway(root: caDir + "/root.pem", appId: appId, route: "/v2/orders", bind: "authorization",
                                               directory: tmp)
        defer { gateway.stop() }
        let base = ["simulate", "--gateway", gateway.url, "--app-id", appId, "--ca", caDir, "--route", "/v2/orders"]
        let bound = try attestctl(base + ["--requests", "2", "--bind", "authorization:Bearer token-1"])
        XCTAssertEqual(bound.status, 0, bound.stdout)
        XCTAssertTrue(bound.stdout.contains("protected requests 2/2 accepted"), bound.stdout)
        // Without the bound header the route refuses the request.
        let unbound = try attestctl(base + ["--requests", "1"])
        XCTAssertEqual(unbound.status, 1)
        XCTAssertTrue(unbound.stdout.contains("summary: FAIL"), unbound.stdout)
        XCTAssertTrue(gateway.events.contains("refused 401 binding_missing"), "\(gateway.events)")
    }

    func testSimulateFailsWhenAStepDoesNotAnswerAsExpected() throws {
        let tmp = try SimulatorSupport.temporaryDirectory(self)
        let caDir = tmp.appendingPathComponent("ca").path, otherDir = tmp.appendingPathComponent("other").path
        _ = try SimCA.loadOrCreate(directory: caDir)
        _ = try SimCA.loadOrCreate(directory: otherDir)

        // A gateway pinned to another root refuses the attestation: exit 1, nothing else attempted.
        let strangers = try SimulatorFakeGateway(root: otherDir + "/root.pem", appId: appId, directory: tmp)
        defer { strangers.stop() }
        let refused = try attestctl(["simulate", "--gateway", strangers.url, "--app-id", appId, "--ca", caDir])
        XCTAssertEqual(refused.status, 1)
        XCTAssertTrue(refused.stdout.contains("summary: FAIL - attestation refused"), refused.stdout)
        XCTAssertTrue(refused.stdout.contains("attestation_invalid:chain"), refused.stdout)
        XCTAssertFalse(strangers.events.contains { $0.hasPrefix("assert") })

        // A broken gateway that accepts the replay: exit 1.
        let broken = try SimulatorFakeGateway(root: caDir + "/root.pem", appId: appId, acceptReplays: true, directory: tmp)
        defer { broken.stop() }
        let replayed = try attestctl(["simulate", "--gateway", broken.url, "--app-id", appId, "--ca", caDir, "--requests", "2"])
        XCTAssertEqual(replayed.status, 1)
        XCTAssertTrue(replayed.stdout.contains("protected requests 2/2 accepted, replay 200 NOT refused"), replayed.stdout)

        // Wrong prefix: the challenge endpoint is not found.
        let wrongPrefix = try attestctl(["simulate", "--gateway", broken.url, "--app-id", appId, "--ca", caDir, "--prefix", "/aa/v9"])
        XCTAssertEqual(wrongPrefix.status, 1)
        XCTAssertTrue(wrongPrefix.stdout.contains("-> FAILED (expected 201, got 404)"), wrongPrefix.stdout)

        // Nothing listening: network error, exit 1. Usage errors: exit 2.
        let dead = try ReservedPort()
        defer { withExtendedLifetime(dead) {} }
        let closed = try attestctl(["simulate", "--gateway", "http://127.0.0.1:\(dead.port)", "--app-id", appId, "--ca", caDir])
        XCTAssertEqual(closed.status, 1)
        XCTAssertTrue(closed.stdout.contains("network error"), closed.stdout)
        XCTAssertEqual(try attestctl(["simulate", "--app-id", appId, "--ca", caDir]).status, 2)
        XCTAssertEqual(try attestctl(["simulate", "--gateway", "https://127.0.0.1:1", "--app-id", appId, "--ca", caDir]).status, 2)
        XCTAssertEqual(try attestctl(["simulate", "--gateway", broken.url, "--app-id", appId, "--ca", caDir, "--requests", "x"]).status, 2)
        // --help is an answer, not a usage error: both flows' usage on standard output, exit 0.
        let help = try attestctl(["simulate", "--help"])
        XCTAssertEqual(help.status, 0, help.stderr)
        XCTAssertTrue(help.stdout.contains("attestctl simulate --gateway http://HOST:PORT"), help.stdout)
        XCTAssertTrue(help.stdout.contains("attestctl simulate --device-key|--ios-unsupported --gateway"), help.stdout)
        XCTAssertFalse(help.stdout.contains("  ["), "no run of spaces inside a usage line: \(help.stdout)")
    }
}
