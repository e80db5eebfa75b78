import AppAttest
import Foundation
import GatewayTestSupport
import XCTest

/// Runs the built `attestctl` binary (built with the tests: `swift build --build-tests` / `swift test`).
final class AttestctlTests: XCTestCase {
    func attestctl() throws -> String { try BuiltProducts.executable("attestctl") }

    func testVerifyAllVectorsExitsZero() throws {
        guard let vectors = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let result = try ChildProcess.run(try attestctl(), ["verify", vectors.path])
        XCTAssertEqual(result.status, 0, String(result.output.suffix(2000)))
        let lines = result.output.split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.last, "508 passed, 0 failed")
        var files = Set<String>()
        for line in lines.dropLast() {
            let object = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], line)
            XCTAssertEqual(object["matches_expected"] as? Bool, true, line)
            XCTAssertNotNil(object["checks"] as? [String: Bool])
            XCTAssertNotNil(object["accepted"] as? Bool)
            if object["variant"] is NSNull { files.insert(object["id"] as? String ?? "") }
        }
        XCTAssertEqual(files.count, 82)
    }

    func testVerifyNowFailsEveryChain() throws {
        guard let vectors = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let file = vectors.appendingPathComponent("attestation-apple-doc-2026.json").path
        let result = try ChildProcess.run(try attestctl(), ["verify", "--now", file])
        XCTAssertEqual(result.status, 1)
        let first = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(result.output.split(separator: "\n")[0].utf8)) as? [String: Any])
        XCTAssertEqual(first["accepted"] as? Bool, false)
        XCTAssertEqual(first["reason"] as? String, "chain_invalid")
        XCTAssertEqual((first["checks"] as? [String: Bool])?["chain"], false)
    }

    func testInspectDecodesAnAttestation() throws {
        guard let vectors = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let result = try ChildProcess.run(try attestctl(), ["inspect", vectors.appendingPathComponent("attestation-apple-doc-2026.json").path])
        XCTAssertEqual(result.status, 0, result.output)
        for expected in ["apple_bundle_version_01", "Apple App Attestation CA 1", "1.2.840.113635.100.8.2", "rpIdHash", "ATTEST", "production",
                         "zgSY9YSD+7TaDXssY6WlOPVS1K3Lmk+pFhlcSWE+ZV0="] {
            XCTAssertTrue(result.output.contains(expected), "inspect output lacks \(expected)")
        }
        let assertion = try ChildProcess.run(try attestctl(), ["inspect", vectors.appendingPathComponent("assertion-worldcoin-dev-2025a.json").path])
        XCTAssertEqual(assertion.status, 0, assertion.output)
        XCTAssertTrue(assertion.output.contains("\"counter\": 1"), assertion.output)
        let garbage = try ChildProcess.run(try attestctl(), ["inspect", "AAAA"])
        XCTAssertNotEqual(garbage.status, 0)
    }

    func testVerifyWithInjectedRootOnRefDeviceVector() throws {
        guard let tools = SharedFixtures.toolsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-root-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let tool = tools.appendingPathComponent("ref_device.py").path
        let key = dir.appendingPathComponent("k.pem").path
        XCTAssertEqual(try ChildProcess.run("python3", [tool, "ca", "--out", dir.path]).status, 0)
        XCTAssertEqual(try ChildProcess.run("python3", [tool, "keygen", "--out", key]).status, 0)
        let minted = try ChildProcess.run("python3", [tool, "attest", "--ca", dir.path, "--key", key, "--app-id", "ABCDE12345.com.example.x",
                                                      "--env", "production", "--challenge", "AAECAw==", "--not-before", "2030-01-01T00:00:00Z"])
        XCTAssertEqual(minted.status, 0, minted.output)
        let json = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(minted.output.utf8)) as? [String: Any])
        let vector: [String: Any] = [
            "kind": "attestation", "id": "ref-device-minted", "attestationObject": json["attestation"] ?? "", "keyId": json["keyId"] ?? "",
            "teamId": "ABCDE12345", "bundleId": "com.example.x", "environment": "production", "clientDataHash": json["clientDataHash"] ?? "",
            "validationTime": "2030-01-02T00:00:00Z",
            "expected": ["cbor_decodes": true, "fmt": true, "chain": true, "nonce": true, "keyId": true, "rpIdHash": true,
                         "counter_zero": true, "aaguid": true, "credentialId": true, "cose_key_matches_leaf": true],
            "variants": [["name": "after-leaf-expiry", "override": ["validationTime": "2030-01-05T00:00:00Z"], "expected": ["chain": false]],
                         ["name": "wrong-environment", "override": ["environment": "development"], "expected": ["aaguid": false]]],
        ]
        let file = dir.appendingPathComponent("vector.json")
        try JSONSerialization.data(withJSONObject: vector).write(to: file)
        let pinned = try ChildProcess.run(try attestctl(), ["verify", "--root", dir.appendingPathComponent("root.pem").path, file.path])
        XCTAssertEqual(pinned.status, 0, pinned.output)
        XCTAssertTrue(pinned.output.hasSuffix("3 passed, 0 failed\n"), pinned.output)
        // Without the test root the chain fails, so the file does not match its expectations.
        let apple = try ChildProcess.run(try attestctl(), ["verify", file.path])
        XCTAssertEqual(apple.status, 1, apple.output)
        XCTAssertTrue(apple.output.contains("\"reason\":\"chain_invalid\""), apple.output)
    }
}
