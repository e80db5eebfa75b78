import AppAttest
import AttestCrypto
import Foundation
import GatewayStore
import GatewayTestSupport
import XCTest

/// A gateway with device keys and tiers in its configuration (DESIGN.md section 8), over a real
/// redis-server and the Python upstream: `/v1/attested` enforce (default `min_tier: attested`),
/// `/v1/device` enforce with `min_tier: device`, `/v1/monitored` monitor (`min_tier: attested`). The
/// app accepts development keys, refuses registrations reporting `debugger` and lowers those reporting
/// `jb_files` to tier `device`.
final class DeviceKeyEnvironment: GatewayClient, @unchecked Sendable {  // immutable after init; parts lock themselves
    let redis: RedisServer
    let upstream: UpstreamProcess
    let clock = MovableClock()
    let cas: TestCAs
    let work: URL
    let gateway: GatewayUnderTest
    /// Between the gateway and Redis when made with `replyDroppingProxy`.
    let proxy: ReplyDroppingProxy?

    var port: UInt16 { gateway.port }

    /// - Parameters:
    ///   - fleetAttestRate: `endpoints.fleet_attest_rate` when given (e.g. `{count: 2, per: 1h}`).
    ///   - maxKeysPerAccount: keys per account (`account_header: X-Account`) when given.
    ///   - registrationTTL: the app's `registration_ttl` when given (e.g. `1h`).
    ///   - replyDroppingProxy: the gateway reaches Redis through a `ReplyDroppingProxy`.
    init(fleetAttestRate: String? = nil, maxKeysPerAccount: Int? = nil, registrationTTL: String? = nil,
         replyDroppingProxy: Bool = false) throws {
        cas = try TestCAs.shared()
        work = try E2EPaths.temporaryDirectory("devicekeys")
        redis = try RedisServer()
        upstream = try UpstreamProcess()
        proxy = replyDroppingProxy ? try ReplyDroppingProxy(redisPort: redis.port, directory: work) : nil
        let yaml = """
            listen: 127.0.0.1:0
            admin: 127.0.0.1:0
            store:
              url: \(proxy.map { "redis://127.0.0.1:\($0.port)/0" } ?? redis.url)
            \(fleetAttestRate.map { "endpoints:\n  fleet_attest_rate: \($0)" } ?? "")
            apps:
              - app_id: \(E2EEnvironment.appId)
                environment: development
                integrity_refuse: [debugger]
                integrity_lower: [jb_files]
            \(registrationTTL.map { "    registration_ttl: \($0)" } ?? "")
            \(maxKeysPerAccount.map { "    account_header: X-Account\n    account_key: device-key-tests-account-key-32b\n    max_keys_per_account: \($0)" } ?? "")
            trust:
              extra_roots:
            \(cas.trustedRoots.map { "    - \($0)" }.joined(separator: "\n"))
            upstreams:
              app: http://127.0.0.1:\(upstream.port)
            routes:
              - name: attested
                path_prefix: /v1/attested
                upstream: app
              - name: device
                path_prefix: /v1/device
                upstream: app
                min_tier: device
              - name: monitored
                path_prefix: /v1/monitored
                upstream: app
                mode: monitor

            """
        gateway = try GatewayUnderTest(yaml: yaml, baseDirectory: work.path, clock: clock.gatewayClock)
    }

    func stop() {
        gateway.stop()
        proxy?.stop()
        upstream.stop()
        redis.stop()
        try? FileManager.default.removeItem(at: work)
    }

    // MARK: - Client side of POST /register

    /// A new device key held by openssl.
    func makeKey(curve: String = "prime256v1") throws -> OpenSSLDeviceKey { try OpenSSLDeviceKey(directory: work, curve: curve) }

    /// A challenge of `purpose` for `kid` (fails the test unless 201).
    func challenge(kid: String, purpose: String = "register", file: StaticString = #filePath, line: UInt = #line) throws -> String {
        let reply = try requestChallenge(keyId: kid, purpose: purpose)
        XCTAssertEqual(reply.status, 201, "challenge: \(reply)", file: file, line: line)
        guard let challenge = reply.json["challenge"] as? String else { throw ChildProcessError.notReady("no challenge in \(reply)") }
        return challenge
    }

    /// The registration client data (framed `register-v1`, challenge, publicKey, backing, codes).
    static func clientData(challenge: String, point: [UInt8], backing: String, integrity: [String]) -> [UInt8] {
        DeviceKeyRegistration.clientData(challenge: Array(Data(base64Encoded: challenge) ?? Data()), publicKey: point,
                                         backing: backing, integrity: integrity)
    }

    /// `POST /app-attest/v1/register` with the JSON fields as given.
    func register(_ fields: [String: Any], account: String? = nil) throws -> HTTPReply {
        let body = try JSONSerialization.data(withJSONObject: fields)
        return try send("POST", "/app-attest/v1/register",
                        headers: [("Content-Type", "application/json")] + (account.map { [("X-Account", $0)] } ?? []), body: Array(body))
    }

    /// The usual registration body: `key` signs the client data over `challenge` (unless `signer`
    /// or `signature` says otherwise), with `appAttest` when given.
    func registrationFields(_ key: OpenSSLDeviceKey, challenge: String, backing: String = "software", integrity: [String] = [],
                            signer: OpenSSLDeviceKey? = nil, appAttest: [String: String]? = nil,
                            publicKey: [UInt8]? = nil) throws -> [String: Any] {
        let point = publicKey ?? key.point
        let data = DeviceKeyEnvironment.clientData(challenge: challenge, point: point, backing: backing, integrity: integrity)
        var fields: [String: Any] = [
            "publicKey": Data(point).base64EncodedString(), "challenge": challenge,
            "signature": Data(try (signer ?? key).sign(data)).base64EncodedString(), "backing": backing, "integrity": integrity,
        ]
        if let appAttest { fields["appAttest"] = appAttest }
        return fields
    }

    /// Registers `key` at tier device (fails the test unless 201).
    @discardableResult
    func registeredKey(integrity: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> OpenSSLDeviceKey {
        let key = try makeKey()
        let reply = try register(try registrationFields(key, challenge: try challenge(kid: key.kid), integrity: integrity))
        XCTAssertEqual(reply.status, 201, "register: \(reply)", file: file, line: line)
        return key
    }

    /// A request on `target` signed by `key` (`App-Attest-Signature`) over binding v1, with an `assert`
    /// challenge fetched unless given.
    func signed(_ key: OpenSSLDeviceKey, method: String = "POST", target: String, body: [UInt8] = Array("{}".utf8),
                challenge given: String? = nil, signer: OpenSSLDeviceKey? = nil) throws -> (headers: [(String, String)], challenge: String) {
        let challenge = try given ?? self.challenge(kid: key.kid, purpose: "assert")
        let clientData = try ClientDataBinding.v1(challenge: Array(Data(base64Encoded: challenge) ?? Data()), method: method,
                                                  target: target, bodySHA256: SHA256.hash(body))
        let signature = try (signer ?? key).sign(clientData)
        return ([("App-Attest-Key-Id", key.kid), ("App-Attest-Challenge", challenge),
                 ("App-Attest-Signature", Data(signature).base64EncodedString())], challenge)
    }

    /// `redis-cli` with the environment's server.
    func redisCLI(_ arguments: String...) throws -> String {
        try ChildProcess.run("redis-cli", ["-p", String(redis.port)] + arguments).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The Redis keys of `kid` (`KEYS aa:{<kid b64url>}:*`), sorted.
    func redisKeys(kid: String) throws -> [String] {
        try redisCLI("KEYS", "aa:{\(base64URL(kid))}:*").split(separator: "\n").map(String.init).sorted()
    }

    /// The Redis keys of `kid` after a `201` of `/register`, without the key's first `assert`
    /// challenge that the answer carries in `App-Attest-Next-Challenge` (fails the test when that
    /// challenge is missing from the answer or from Redis, or has another purpose).
    func redisKeys(kid: String, besidesNextChallengeOf reply: HTTPReply, file: StaticString = #filePath,
                   line: UInt = #line) throws -> [String] {
        guard let next = reply.header("App-Attest-Next-Challenge") else {
            XCTFail("the 201 carries no next challenge: \(reply)", file: file, line: line)
            return try redisKeys(kid: kid)
        }
        let name = "aa:{\(base64URL(kid))}:ch:\(base64URL(next))"
        XCTAssertEqual(try redisCLI("HGET", name, "p"), "assert", "the next challenge is pending for assertions", file: file, line: line)
        return try redisKeys(kid: kid).filter { $0 != name }
    }
}

extension DeviceKeyEnvironment {
    /// A new device key registered through `/register`'s attestation form, `appKey` attesting over its
    /// client data (software backing): the key and the answer.
    func registerAttested(by appKey: RefDevice, integrity: [String] = [], account: String? = nil) throws -> (key: OpenSSLDeviceKey, reply: HTTPReply) {
        let key = try makeKey()
        let challenge = try self.challenge(kid: key.kid)
        let data = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "software", integrity: integrity)
        let attestation = try appKey.attestation(challenge: Data(data).base64EncodedString(), appId: E2EEnvironment.appId,
                                                 environment: "development", caDirectory: appKey.caDirectory)
        let reply = try register(try registrationFields(key, challenge: challenge, integrity: integrity,
                                                        appAttest: ["keyId": appKey.keyId, "attestation": attestation]), account: account)
        return (key, reply)
    }

    /// A new device key registered through the assertion form: `appKey`'s assertion with `counter`
    /// over its client data (software backing, no integrity codes).
    func registerVouched(by appKey: RefDevice, counter: UInt32, account: String? = nil) throws -> (key: OpenSSLDeviceKey, reply: HTTPReply) {
        let key = try makeKey()
        let challenge = try self.challenge(kid: key.kid)
        let data = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "software", integrity: [])
        let assertion = try appKey.rawAssertion(clientData: data, counter: counter)
        let reply = try register(try registrationFields(key, challenge: challenge, appAttest: ["keyId": appKey.keyId, "assertion": assertion]),
                                 account: account)
        return (key, reply)
    }
}

extension RefDevice {
    /// An assertion over arbitrary client data (`ref_device.py assert-raw`).
    func rawAssertion(clientData: [UInt8], counter: UInt32, appId: String = E2EEnvironment.appId) throws -> String {
        let out = try RefDevice.run(["assert-raw", "--key", keyFile.path, "--app-id", appId, "--counter", String(counter),
                                     "--client-data-b64", Data(clientData).base64EncodedString()])
        guard let object = out["assertion"] as? String else { throw ChildProcessError.notReady("assert-raw: \(out)") }
        return object
    }
}
