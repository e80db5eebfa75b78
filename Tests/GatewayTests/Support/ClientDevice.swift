import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
import GatewayRules
import GatewayTestSupport
import XCTest

/// A software App Attest device used as a client of the gateway: ../shared/tools/ref_device.py (an
/// independent implementation, run as a child process) or our `AttestSimulator.SoftwareDevice`
/// (in-process minting). Binary values are standard base64, as a client would send them.
protocol ClientDevice: AnyObject {
    /// Which implementation, for messages.
    var kind: String { get }
    /// keyId, standard base64 of 32 bytes.
    var keyId: String { get }
    /// The CA folder this device's attestations chain to by default.
    var caDirectory: URL { get }
    /// An attestation object (base64) over clientDataHash = SHA-256(challenge bytes).
    func attestation(challenge: String, appId: String, environment: String, caDirectory: URL) throws -> String
    /// An assertion object (base64) over client data v1 (challenge, method, target, SHA-256 of body).
    func assertion(challenge: String, method: String, target: String, body: [UInt8], counter: UInt32, appId: String) throws -> String
}

/// keyId of a base64 string as URL-safe base64 without padding (the Redis hash tag).
func base64URL(_ standard: String) -> String {
    String(standard.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").prefix { $0 != "=" })
}

/// ../shared/tools/ref_device.py with one key file.
final class RefDevice: ClientDevice {
    let kind = "ref_device.py"
    let keyFile: URL
    let keyId: String
    let caDirectory: URL
    /// iOS 27 authenticatorData map (`--ios27-ext BUNDLEVERSION`) on assertions, if set.
    var ios27BundleVersion: String?

    /// `ref_device.py keygen` into `directory`.
    init(directory: URL, caDirectory: URL) throws {
        keyFile = directory.appendingPathComponent("device-\(UUID().uuidString.prefix(8)).pem")
        self.caDirectory = caDirectory
        let out = try RefDevice.run(["keygen", "--out", keyFile.path])
        guard let id = out["keyId"] as? String else { throw ChildProcessError.notReady("keygen: \(out)") }
        keyId = id
    }

    func attestation(challenge: String, appId: String, environment: String, caDirectory: URL) throws -> String {
        let out = try RefDevice.run(["attest", "--ca", caDirectory.path, "--key", keyFile.path, "--app-id", appId,
                                     "--env", environment, "--challenge", challenge])
        guard let object = out["attestation"] as? String, out["keyId"] as? String == keyId else {
            throw ChildProcessError.notReady("attest: \(out)")
        }
        return object
    }

    func assertion(challenge: String, method: String, target: String, body: [UInt8], counter: UInt32, appId: String) throws -> String {
        let bodyFile = keyFile.deletingLastPathComponent().appendingPathComponent("body-\(UUID().uuidString.prefix(8))")
        _ = FileManager.default.createFile(atPath: bodyFile.path, contents: Data(body))
        defer { try? FileManager.default.removeItem(at: bodyFile) }
        let out = try RefDevice.run(["assert", "--key", keyFile.path, "--app-id", appId, "--counter", String(counter),
                                     "--challenge", challenge, "--method", method, "--target", target,
                                     "--body-file", bodyFile.path] + (ios27BundleVersion.map { ["--ios27-ext", $0] } ?? []))
        guard let object = out["assertion"] as? String else { throw ChildProcessError.notReady("assert: \(out)") }
        return object
    }

    /// `ref_device.py ca --out DIR`.
    static func makeCA(at directory: URL) throws {
        _ = try run(["ca", "--out", directory.path])
    }

    /// Runs ref_device.py and parses its JSON output.
    static func run(_ arguments: [String]) throws -> [String: Any] {
        let result = try ChildProcess.run("python3", [try E2EPaths.refDevice()] + arguments)
        guard result.status == 0,
              let object = try? JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any] else {
            throw ChildProcessError.notReady("ref_device.py \(arguments.first ?? "") exited \(result.status): \(result.output)")
        }
        return object
    }
}

/// Our simulator (`AttestSimulator.SoftwareDevice`), minting in-process.
final class SimDevice: ClientDevice {
    let kind = "AttestSimulator"
    private var device: SoftwareDevice
    let keyId: String
    let caDirectory: URL
    /// iOS 27 authenticatorData map to append to assertions, if any.
    var ios27Extension: IOS27Extension?

    init(caDirectory: URL) throws {
        device = try SoftwareDevice()
        keyId = Data(device.keyId).base64EncodedString()
        self.caDirectory = caDirectory
    }

    func attestation(challenge: String, appId: String, environment: String, caDirectory: URL) throws -> String {
        let ca = try TestCA.load(directory: caDirectory.path)
        guard let env = AppAttestEnvironment(rawValue: environment), let bytes = Data(base64Encoded: challenge) else {
            throw SimulatorError.invalidArgument("environment \(environment) / challenge \(challenge)")
        }
        let minted = try device.mintAttestation(ca: ca, appId: appId, environment: env, challenge: Array(bytes))
        return Data(minted.attestationObject).base64EncodedString()
    }

    func assertion(challenge: String, method: String, target: String, body: [UInt8], counter: UInt32, appId: String) throws -> String {
        guard let bytes = Data(base64Encoded: challenge) else { throw SimulatorError.invalidArgument("challenge \(challenge)") }
        let minted = try device.mintAssertion(appId: appId, challenge: Array(bytes), method: method, target: target, body: body,
                                              options: AssertionOptions(counter: counter, ios27Extension: ios27Extension))
        return Data(minted.assertionObject).base64EncodedString()
    }
}

/// The test CAs of this test process, made once: ref_device.py's (trusted), the simulator's
/// (trusted) and a second ref_device.py CA that the gateway does not trust.
final class TestCAs: @unchecked Sendable {  // immutable after the one-time init under `lock`
    let directory: URL
    /// ref_device.py CA, in trust.extra_roots (nil when ../shared is absent).
    let ref: URL?
    /// ref_device.py CA that is NOT trusted (nil when ../shared is absent).
    let untrusted: URL?
    /// AttestSimulator.TestCA, in trust.extra_roots.
    let sim: URL

    private init() throws {
        directory = try E2EPaths.temporaryDirectory("ca")
        sim = directory.appendingPathComponent("sim-ca")
        try TestCA.generate().write(to: sim.path)
        if E2EPaths.hasRefDevice {
            let ref = directory.appendingPathComponent("ref-ca")
            let untrusted = directory.appendingPathComponent("untrusted-ca")
            try RefDevice.makeCA(at: ref)
            try RefDevice.makeCA(at: untrusted)
            self.ref = ref
            self.untrusted = untrusted
        } else {
            ref = nil
            untrusted = nil
        }
    }

    /// Root PEM files to trust.
    var trustedRoots: [String] { ([ref, sim].compactMap { $0 }).map { $0.appendingPathComponent("root.pem").path } }

    nonisolated(unsafe) private static var instance: TestCAs?
    private static let lock = NSLock()

    static func shared() throws -> TestCAs {
        lock.lock(); defer { lock.unlock() }
        if let instance { return instance }
        let made = try TestCAs()
        instance = made
        atexit { if let dir = TestCAs.instance?.directory { try? FileManager.default.removeItem(at: dir) } }
        return made
    }
}
