import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
import GatewayRules
import GatewayTestSupport
import XCTest

// Helpers of the Simulator* tests. Types of the AttestSimulator module are always spelled with the
// module name: this test module may declare its own test doubles with the same short names.

/// The simulator's test CA (module-qualified).
typealias SimCA = AttestSimulator.TestCA
/// The simulator's minted attestation (module-qualified).
typealias SimAttestation = AttestSimulator.MintedAttestation
/// The simulator's minted assertion (module-qualified).
typealias SimAssertion = AttestSimulator.MintedAssertion

/// Paths and child-process helpers for the simulator tests.
enum SimulatorSupport {
    static let teamId = "ABCDE12345"
    static let bundleId = "com.example.gateway-test"
    static let appId = teamId + "." + bundleId

    /// ../shared/tools, or XCTSkip when ../shared is absent.
    static func toolsDirectory() throws -> URL {
        guard let tools = SharedFixtures.toolsDirectory,
              FileManager.default.fileExists(atPath: tools.appendingPathComponent("ref_device.py").path) else {
            throw XCTSkip(SharedFixtures.absentMessage)
        }
        return tools
    }

    static func refDevice() throws -> String { try toolsDirectory().appendingPathComponent("ref_device.py").path }
    static func refVerify() throws -> String { try toolsDirectory().appendingPathComponent("ref_verify.py").path }

    /// A fresh temporary folder, removed at the end of the test.
    static func temporaryDirectory(_ test: XCTestCase) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("attest-sim-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        test.addTeardownBlock { try? FileManager.default.removeItem(at: url) }
        return url
    }

    /// Runs a child process to completion; stdout and stderr are kept apart.
    static func run(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try ChildProcess.which(executable))
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        // Read both pipes concurrently so that neither can fill up and block the child.
        let group = DispatchGroup()
        nonisolated(unsafe) var errData = Data()
        group.enter()
        DispatchQueue.global().async {
            errData = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    /// Runs a Python snippet with shared/tools on sys.path (`import ref_device`) and parses the JSON
    /// object it prints as its last line.
    static func python(_ script: String, _ arguments: [String] = []) throws -> [String: Any] {
        let tools = try toolsDirectory().path
        let prelude = "import sys, json, base64, hashlib\nsys.dont_write_bytecode = True\nsys.path.insert(0, \(pythonString(tools)))\nimport ref_device\n"
        let result = try run("python3", ["-c", prelude + script] + arguments)
        guard result.status == 0 else { throw SimulatorTestError("python3 failed (\(result.status)): \(result.stderr)\n\(result.stdout)") }
        return try jsonObject(lastLine(result.stdout))
    }

    /// Runs shared/tools/ref_device.py with `arguments`; returns its JSON output.
    static func refDeviceCLI(_ arguments: [String]) throws -> [String: Any] {
        let result = try run("python3", [try refDevice()] + arguments)
        guard result.status == 0 else { throw SimulatorTestError("ref_device.py \(arguments.first ?? "") failed: \(result.stderr)") }
        return try jsonObject(result.stdout)
    }

    /// Writes `vector` as JSON into `directory` and runs `ref_verify.py --json --root ROOT` on it.
    /// - Returns: exit status and the parsed report.
    static func refVerify(_ vector: [String: Any], in directory: URL, root: String) throws -> (status: Int32, report: [String: Any]) {
        let id = vector["id"] as? String ?? "vector"
        let path = directory.appendingPathComponent("\(id).json")
        try JSONSerialization.data(withJSONObject: vector, options: [.prettyPrinted, .sortedKeys]).write(to: path)
        let result = try run("python3", [try refVerify(), "--json", "--root", root, path.path])
        return (result.status, try jsonObject(result.stdout))
    }

    static func jsonObject(_ text: String) throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
            throw SimulatorTestError("not a JSON object: \(text.prefix(500))")
        }
        return object
    }

    static func lastLine(_ text: String) -> String {
        text.split(separator: "\n").last.map(String.init) ?? ""
    }

    static func pythonString(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "'", with: "\\'") + "'"
    }

    static func b64(_ bytes: [UInt8]) -> String { Base64.encode(bytes) }

    static func unb64(_ value: Any?) throws -> [UInt8] {
        guard let text = value as? String, let bytes = Base64.decode(text) else { throw SimulatorTestError("not base64: \(String(describing: value))") }
        return bytes
    }

    static func iso(_ seconds: Int64) -> String { CivilTime.iso8601(seconds) }

    /// An attestation vector in the schema of shared/vectors/README.md, every check expected true,
    /// verified at the leaf's notBefore + 30 minutes.
    static func attestationVector(id: String, minted: SimAttestation, environment: AppAttestEnvironment,
                                  challenge: [UInt8]?, teamId: String = teamId, bundleId: String = bundleId) -> [String: Any] {
        let checks = ["cbor_decodes", "fmt", "chain", "nonce", "keyId", "rpIdHash", "counter_zero", "aaguid", "credentialId",
                      "cose_key_matches_leaf"]
        return [
            "kind": "attestation", "id": id,
            "attestationObject": b64(minted.attestationObject), "keyId": b64(minted.keyId),
            "teamId": teamId, "bundleId": bundleId, "appId": teamId + "." + bundleId,
            "environment": environment.rawValue,
            "challenge": challenge.map { b64($0) } ?? NSNull(), "clientData": NSNull(),
            "clientDataHash": b64(minted.clientDataHash),
            "validationTime": iso(minted.credentialCertificate.notBefore + 1800),
            "expected": Dictionary(uniqueKeysWithValues: checks.map { ($0, true) }),
        ]
    }

    /// An assertion vector (README schema), every check expected true.
    static func assertionVector(id: String, minted: SimAssertion, publicKeyPoint: [UInt8], previousCounter: UInt32 = 0,
                                teamId: String = teamId, bundleId: String = bundleId) -> [String: Any] {
        let checks = ["signature", "rpIdHash", "counter_matches_expected", "counter_greater_than_previous",
                      "publicKey_matches_keyId", "clientDataHash_is_sha256_of_clientData"]
        return [
            "kind": "assertion", "id": id,
            "assertion": b64(minted.assertionObject), "clientData": b64(minted.clientData),
            "clientDataHash": b64(minted.clientDataHash), "publicKeyX963": b64(publicKeyPoint),
            "keyId": b64(minted.keyId), "teamId": teamId, "bundleId": bundleId,
            "expectedCounter": Int(minted.counter), "previousCounter": Int(previousCounter),
            "expected": Dictionary(uniqueKeysWithValues: checks.map { ($0, true) }),
        ]
    }

    /// The `results` of a ref_verify report as check name -> Bool.
    static func results(_ report: [String: Any]) -> [String: Bool] {
        (report["results"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool }
    }
}

/// A test failure with a message.
struct SimulatorTestError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
