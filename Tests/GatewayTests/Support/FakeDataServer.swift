import AttestCrypto
import AttestSimulator
import Foundation
import GatewayRules
import GatewayTestSupport
import XCTest

/// Tests/GatewayTests/Fixtures/fake_data_server.py as a child process: Apple's App Attest data server
/// protocol over TLS on 127.0.0.1 (certificate `TestPKI.shared.address`, CA `TestPKI.shared.root`),
/// checking each JWT with PyPI `cryptography` against the DeviceCheck key made here.
final class FakeDataServer: @unchecked Sendable {  // immutable after init
    static let teamID = "ABCDE12345"
    static let keyID = "KEYID98765"

    let process: ChildProcess
    let port: UInt16
    /// Scenario files and requests.log.
    let directory: URL
    /// The DeviceCheck key (.p8) the fake trusts, and another one it does not.
    let keyFile: String
    let wrongKeyFile: String
    /// PEM of the CA that issued the fake's certificate, and of an unrelated one.
    let caFile: String
    let wrongCAFile: String
    /// The test receipt CA whose receipts the fake answers with, and its root file.
    let receiptCA: TestReceiptCA
    let receiptRootFile: String

    init() throws {
        try ChildProcess.require("python3")
        directory = try E2EPaths.temporaryDirectory("datasrv")
        let key = try ECPrivateKey(generatingOn: .p256)
        keyFile = directory.appendingPathComponent("AuthKey.p8").path
        try key.pkcs8PEM().write(toFile: keyFile, atomically: true, encoding: .utf8)
        wrongKeyFile = directory.appendingPathComponent("Wrong.p8").path
        try ECPrivateKey(generatingOn: .p256).pkcs8PEM().write(toFile: wrongKeyFile, atomically: true, encoding: .utf8)
        let publicFile = directory.appendingPathComponent("AuthKey.pub.pem").path
        try PEM.encode(try key.subjectPublicKeyInfo(), label: "PUBLIC KEY").write(toFile: publicFile, atomically: true, encoding: .utf8)
        caFile = TestPKI.shared.root.certificate
        wrongCAFile = TestPKI.shared.wrongRoot.certificate
        receiptCA = try TestReceiptCA.generate()
        receiptRootFile = directory.appendingPathComponent("receipt-root.pem").path
        try receiptCA.root.pem.write(toFile: receiptRootFile, atomically: true, encoding: .utf8)
        let script = SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayTests/Fixtures/fake_data_server.py").path
        let child = try ChildProcess("python3", [script, "--cert", TestPKI.shared.address.chainPath, "--key", TestPKI.shared.address.keyPath,
                                                 "--public-key", publicFile, "--kid", Self.keyID, "--iss", Self.teamID,
                                                 "--dir", directory.path, "--port", "0"])
        process = child
        port = try child.readyPort("fake_data_server.py")
    }

    var url: String { "https://127.0.0.1:\(port)" }

    /// What the fake answers for the receipt `test-receipt:<name>`.
    func set(_ name: String, status: Int, receipt: [UInt8]? = nil, retryAfter: String? = nil, delay: Double? = nil) throws {
        let base = directory.appendingPathComponent(name).path
        try String(status).write(toFile: base + ".status", atomically: true, encoding: .utf8)
        if let receipt { try Data(receipt).base64EncodedString().write(toFile: base + ".receipt", atomically: true, encoding: .utf8) }
        if let retryAfter { try retryAfter.write(toFile: base + ".retry_after", atomically: true, encoding: .utf8) }
        if let delay { try String(delay).write(toFile: base + ".delay", atomically: true, encoding: .utf8) }
    }

    /// The requests so far (name, status, jwt).
    func requests(_ name: String? = nil) -> [[String: Any]] {
        let text = (try? String(contentsOf: directory.appendingPathComponent("requests.log"), encoding: .utf8)) ?? ""
        return StartedLine.jsonLines(text).filter { name == nil || $0["name"] as? String == name }
    }

    /// A refreshed receipt for `device` (type RECEIPT) with `riskMetric`, created now.
    /// (`type`, a creation time `createdIn` seconds from now and an expiry `expiresIn` seconds from
    /// now, when given, make the receipts a data server should never answer with.)
    func refreshedReceipt(for device: RiskDevice, riskMetric: Int?, appId: String? = nil,
                          signer: TestReceiptCA? = nil, notBeforeIn: Int64 = 86_400, type: String = "RECEIPT",
                          createdIn: Int64 = 0, expiresIn: Int64? = nil) throws -> [UInt8] {
        let now = Int64(Date().timeIntervalSince1970)
        let created = now + createdIn
        let fields = ReceiptFields(appId: appId ?? device.appId, attestedCertificate: device.credentialCertificate,
                                   type: type, environment: "sandbox", creationTime: created, riskMetric: riskMetric,
                                   notBefore: created + notBeforeIn, expirationTime: expiresIn.map { now + $0 })
        return try (signer ?? receiptCA).mint(fields)
    }

    func stop() { process.stop(signal: SIGKILL, grace: 1) }
    deinit { stop() }
}

/// An in-process software device (AttestSimulator) whose attestation carries the receipt
/// `test-receipt:<name>` (name = keyId in base64url), so that the fake data server knows the key.
final class RiskDevice: ClientDevice, @unchecked Sendable {  // used by one test thread
    let kind = "AttestSimulator (risk)"
    private var device: SoftwareDevice
    let keyId: String
    let caDirectory: URL
    let appId: String
    /// The scenario name (keyId base64url).
    let name: String
    /// The device key's 65-byte point.
    var publicKeyPoint: [UInt8] { device.publicKeyPoint }
    /// DER of the credential certificate of the last attestation.
    private(set) var credentialCertificate: [UInt8] = []

    init(caDirectory: URL, appId: String) throws {
        device = try SoftwareDevice()
        keyId = Data(device.keyId).base64EncodedString()
        name = base64URL(keyId)
        self.caDirectory = caDirectory
        self.appId = appId
    }

    func attestation(challenge: String, appId: String, environment: String, caDirectory: URL) throws -> String {
        let ca = try TestCA.load(directory: caDirectory.path)
        guard let env = AppAttestEnvironment(rawValue: environment), let bytes = Data(base64Encoded: challenge) else {
            throw SimulatorError.invalidArgument("environment \(environment) / challenge \(challenge)")
        }
        let minted = try device.mintAttestation(ca: ca, appId: appId, environment: env, challenge: Array(bytes),
                                                options: AttestationOptions(receipt: Array("test-receipt:\(name)".utf8)))
        credentialCertificate = minted.credentialCertificate.derBytes
        return Data(minted.attestationObject).base64EncodedString()
    }

    func assertion(challenge: String, method: String, target: String, body: [UInt8], counter: UInt32, appId: String) throws -> String {
        guard let bytes = Data(base64Encoded: challenge) else { throw SimulatorError.invalidArgument("challenge \(challenge)") }
        let minted = try device.mintAssertion(appId: appId, challenge: Array(bytes), method: method, target: target, body: body,
                                              options: AssertionOptions(counter: counter))
        return Data(minted.assertionObject).base64EncodedString()
    }
}

/// Lifecycle events a runtime raised (name and fields), for tests.
final class EventLog: @unchecked Sendable {  // `entries` guarded by `lock`
    private let lock = NSLock()
    private var entries: [(String, [String: String])] = []

    var sink: @Sendable (String, [(String, String)]) -> Void {
        { [self] name, fields in lock.withLock { entries.append((name, Dictionary(fields, uniquingKeysWith: { a, _ in a }))) } }
    }

    func named(_ name: String) -> [[String: String]] { lock.withLock { entries.filter { $0.0 == name }.map(\.1) } }
}
