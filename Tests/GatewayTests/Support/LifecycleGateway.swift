import AttestCrypto
import Foundation
import Gateway
import GatewayStore
import GatewayTestSupport
import XCTest

/// A gateway for the key lifecycle tests (issue 10): a real redis-server, the Python upstream, the
/// test CAs, a movable clock, and an app with `registration_ttl: 1h` that counts keys per account
/// (`account_header: X-Account`, the HMAC key in a file, `max_keys_per_account: 2`). Client-side
/// steps are independent of the gateway's code: client data framed here, device keys made by
/// ref_device.py and signed by `openssl dgst -sha256 -sign`, App Attest assertions minted by
/// ref_device.py `assert-raw`.
final class LifecycleGateway: GatewayClient, @unchecked Sendable {  // immutable after init
    static let appId = E2EEnvironment.appId
    static let accountHeader = "X-Account"
    static let accountKey = "lifecycle-test-account-key-0123456789"
    static let ttlSeconds: Int64 = 3600

    let redis: RedisServer
    let upstream: UpstreamProcess
    let clock = MovableClock()
    let cas: TestCAs
    let work: URL
    let gateway: GatewayUnderTest
    let accountKeyFile: URL
    var port: UInt16 { gateway.port }

    /// With `secondAppId`, a second app with the same account header and account key (the same file)
    /// but `max_keys_per_account: 1` and no `registration_ttl`.
    init(secondAppId: String? = nil) throws {
        cas = try TestCAs.shared()
        work = try E2EPaths.temporaryDirectory("lifecycle")
        redis = try RedisServer()
        upstream = try UpstreamProcess()
        accountKeyFile = work.appendingPathComponent("account.key")
        try (LifecycleGateway.accountKey + "\n").write(to: accountKeyFile, atomically: true, encoding: .utf8)
        let keyPath = accountKeyFile.path
        let secondApp = secondAppId.map {
            ["  - app_id: \($0)", "    environment: development", "    account_header: \(LifecycleGateway.accountHeader)",
             "    account_key_file: \(keyPath)", "    max_keys_per_account: 1"].joined(separator: "\n")
        } ?? ""
        let yaml = """
            listen: 127.0.0.1:0
            admin: 127.0.0.1:0
            store: \(redis.url)
            apps:
              - app_id: \(LifecycleGateway.appId)
                environment: development
                registration_ttl: 1h
                account_header: \(LifecycleGateway.accountHeader)
                account_key_file: \(accountKeyFile.path)
                max_keys_per_account: 2
            \(secondApp)
            trust:
              extra_roots:
            \(cas.trustedRoots.map { "    - \($0)" }.joined(separator: "\n"))
            upstreams:
              app: http://127.0.0.1:\(upstream.port)
            routes:
              - name: protected
                path_prefix: /v1/protected
                upstream: app
                mode: enforce

            """
        gateway = try GatewayUnderTest(yaml: yaml, baseDirectory: work.path, clock: clock.gatewayClock)
    }

    func stop() {
        gateway.stop()
        upstream.stop()
        redis.stop()
        try? FileManager.default.removeItem(at: work)
    }

    // MARK: - Client side

    /// Binding v1's framing of the lifecycle client data, written here independently of the gateway.
    static func clientData(_ label: String, challenge: [UInt8], keyId: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        for field in [Array(label.utf8), challenge, keyId] {
            let n = UInt32(field.count)
            out += [UInt8(n >> 24), UInt8(n >> 16 & 0xFF), UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)] + field
        }
        return out
    }

    /// `POST /app-attest/v1/<action>` with a JSON body.
    func post(_ action: String, _ fields: [String: String], headers: [(String, String)] = []) throws -> HTTPReply {
        let body = try JSONSerialization.data(withJSONObject: fields)
        return try send("POST", "/app-attest/v1/\(action)", headers: [("Content-Type", "application/json")] + headers, body: Array(body))
    }

    /// An App Attest key of `appId` attested through `/attest`, for `account` when given.
    func attestedRefDevice(account: String? = nil, appId: String = LifecycleGateway.appId, file: StaticString = #filePath,
                           line: UInt = #line) throws -> RefDevice {
        guard let ca = cas.ref else { throw XCTSkip(SharedFixtures.absentMessage) }
        let device = try RefDevice(directory: work, caDirectory: ca)
        let challenge = try self.challenge(for: device, purpose: "attest", file: file, line: line)
        let attestation = try device.attestation(challenge: challenge, appId: appId, environment: "development", caDirectory: ca)
        let reply = try post("attest", ["keyId": device.keyId, "challenge": challenge, "attestation": attestation],
                             headers: account.map { [(LifecycleGateway.accountHeader, $0)] } ?? [])
        XCTAssertEqual(reply.status, 201, "attest: \(reply)", file: file, line: line)
        guard reply.status == 201 else { throw ChildProcessError.notReady("attestation refused: \(reply)") }
        return device
    }

    /// ref_device.py `assert-raw`: an App Attest assertion over `clientData`.
    func assertion(_ device: RefDevice, clientData: [UInt8], counter: UInt32) throws -> String {
        let out = try RefDevice.run(["assert-raw", "--key", device.keyFile.path, "--app-id", LifecycleGateway.appId,
                                     "--counter", String(counter), "--client-data-b64", Data(clientData).base64EncodedString()])
        guard let assertion = out["assertion"] as? String else { throw ChildProcessError.notReady("assert-raw: \(out)") }
        return assertion
    }

    /// A protected request signed by `device` (a key of `appId`) with `counter`.
    func protectedRequest(_ device: RefDevice, counter: UInt32, appId: String = LifecycleGateway.appId) throws -> HTTPReply {
        try send(try signedRequest(device, target: "/v1/protected/item", body: Array("{}".utf8), counter: counter, appId: appId))
    }

    /// The JSON of `/renew` or `/forget` with an App Attest assertion.
    func lifecycleWithAssertion(_ action: String, _ device: RefDevice, challenge: String, counter: UInt32,
                                label: String? = nil) throws -> HTTPReply {
        let data = LifecycleGateway.clientData(label ?? "\(action)-v1", challenge: Array(Data(base64Encoded: challenge)!),
                                               keyId: Array(Data(base64Encoded: device.keyId)!))
        return try post(action, ["keyId": device.keyId, "challenge": challenge,
                                 "assertion": try assertion(device, clientData: data, counter: counter)])
    }

    // MARK: - Device keys (records written straight into the store: the registration is another branch's)

    /// A device key: ref_device.py keygen (PEM private key); its 65-byte point via `openssl ec`.
    struct DeviceKey {
        let keyFile: URL
        let keyId: String
        let point: [UInt8]
    }

    func makeDeviceKey() throws -> DeviceKey {
        let keyFile = work.appendingPathComponent("devkey-\(UUID().uuidString.prefix(8)).pem")
        let out = try RefDevice.run(["keygen", "--out", keyFile.path])
        guard let keyId = out["keyId"] as? String else { throw ChildProcessError.notReady("keygen: \(out)") }
        let der = work.appendingPathComponent("pub-\(UUID().uuidString.prefix(8)).der")
        let result = try ChildProcess.run("openssl", ["ec", "-in", keyFile.path, "-pubout", "-outform", "DER", "-out", der.path])
        guard result.status == 0, let bytes = FileManager.default.contents(atPath: der.path), bytes.count >= 65 else {
            throw ChildProcessError.notReady("openssl ec: \(result.output)")
        }
        return DeviceKey(keyFile: keyFile, keyId: keyId, point: Array(bytes.suffix(65)))
    }

    /// `openssl dgst -sha256 -sign KEY` over `message`: a DER ECDSA P-256 / SHA-256 signature (base64).
    func opensslSign(_ key: DeviceKey, _ message: [UInt8]) throws -> String {
        let input = work.appendingPathComponent("msg-\(UUID().uuidString.prefix(8))")
        let output = work.appendingPathComponent("sig-\(UUID().uuidString.prefix(8))")
        _ = FileManager.default.createFile(atPath: input.path, contents: Data(message))
        let result = try ChildProcess.run("openssl", ["dgst", "-sha256", "-sign", key.keyFile.path, "-out", output.path, input.path])
        guard result.status == 0, let signature = FileManager.default.contents(atPath: output.path) else {
            throw ChildProcessError.notReady("openssl dgst -sign: \(result.output)")
        }
        return signature.base64EncodedString()
    }

    /// Stores a `device`-tier device-key record for `key` directly (issue + register through the store
    /// API; backing `software`, as `POST /register` writes it), with the app's expiry from the movable clock.
    func registerDeviceKey(_ key: DeviceKey) throws {
        let keyId = try KeyID(Array(Data(base64Encoded: key.keyId)!))
        let now = clock.now()
        let record = try KeyRecord(keyId: keyId, publicKey: key.point, environment: .development, appId: LifecycleGateway.appId,
                                   createdAt: now, trustTier: .device,
                                   expiresAt: now + LifecycleGateway.ttlSeconds * 1000, backing: .software)
        let challenge = try Challenge((0..<32).map { _ in UInt8.random(in: 0...255) })
        let store = gateway.store
        try storeCall { store.issueChallenge(challenge, keyId: keyId, purpose: .attest, expiresAt: now + 60_000, now: now, completion: $0) }.get()
        let outcome = try storeCall { store.registerKey(record, challenge: challenge, now: now, completion: $0) }.get()
        guard outcome.value != nil else { throw ChildProcessError.notReady("device record refused: \(outcome)") }
    }

    /// The JSON of `/renew` or `/forget` with a device-key signature by `signer` (default: the key itself).
    func lifecycleWithSignature(_ action: String, _ key: DeviceKey, challenge: String, signer: DeviceKey? = nil,
                                label: String? = nil) throws -> HTTPReply {
        let data = LifecycleGateway.clientData(label ?? "\(action)-v1", challenge: Array(Data(base64Encoded: challenge)!),
                                               keyId: Array(Data(base64Encoded: key.keyId)!))
        return try post(action, ["keyId": key.keyId, "challenge": challenge, "signature": try opensslSign(signer ?? key, data)])
    }

    /// A challenge of `purpose` for a keyId (201 expected).
    func challenge(keyId: String, purpose: String, file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let reply = try requestChallenge(keyId: keyId, purpose: purpose)
        XCTAssertEqual(reply.status, 201, "challenge \(purpose): \(reply)", file: file, line: line)
        guard let challenge = reply.json["challenge"] as? String else { throw ChildProcessError.notReady("no challenge: \(reply)") }
        return challenge
    }

    // MARK: - Store

    /// The stored record of a keyId (standard base64).
    func record(_ keyId: String) throws -> KeyRecord? {
        let id = try KeyID(Array(Data(base64Encoded: keyId)!))
        let store = gateway.store
        return try storeCall { store.fetchKey(id, completion: $0) }.get()
    }

    /// Revokes a key through the store API.
    func revoke(_ keyId: String) throws {
        let id = try KeyID(Array(Data(base64Encoded: keyId)!))
        let store = gateway.store
        _ = try storeCall { store.revokeKey(id, completion: $0) }.get()
    }

    /// Runs one store call and waits for it (10 s, then fails).
    private func storeCall<T: Sendable>(_ call: (@escaping @Sendable (Result<T, StoreUnavailable>) -> Void) -> Void) throws -> Result<T, StoreUnavailable> {
        let box = CompletionBox<Result<T, StoreUnavailable>>()
        call { box.put($0) }
        guard let result = box.take(timeout: 10) else { throw ChildProcessError.notReady("store call timed out") }
        return result
    }
}
