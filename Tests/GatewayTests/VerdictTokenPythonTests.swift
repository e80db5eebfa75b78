import AttestCrypto
import Foundation
@testable import Gateway
import GatewayStore
import GatewayTestSupport
import XCTest

/// Verdict tokens from a real gateway (listening on loopback, with redis-server, the Python upstream
/// and curl), verified by an independent implementation: PyJWT + cryptography running the Python
/// snippet of Config/REFERENCE.md as written (`Fixtures/verify_verdict_token.py`), across a key
/// rotation (ES256, generated in Redis) and a secret rotation (HS256), with failing variants
/// (tampered claim, expired token, unknown kid, token for another request). Over HTTP/1.1 and h2c
/// (the token is set on the forward, whatever the client's protocol).
final class VerdictTokenPythonTests: XCTestCase {
    /// A gateway of the standard end-to-end configuration plus a `verdict_token` section.
    final class Gateway: GatewayClient {
        let redis: RedisServer?
        let upstream: UpstreamProcess
        let dead: ReservedPort
        let cas: TestCAs
        let work: URL
        let file: URL
        let gateway: GatewayUnderTest
        var port: UInt16 { gateway.port }

        /// - Parameter redisDown: the redis-server is stopped before the gateway starts.
        init(section: String, redis useRedis: Bool, redisDown: Bool = false) throws {
            cas = try TestCAs.shared()
            work = try E2EPaths.temporaryDirectory("verdict")
            redis = useRedis ? try RedisServer() : nil
            if redisDown { redis?.stop() }
            upstream = try UpstreamProcess()
            dead = try ReservedPort()
            file = work.appendingPathComponent("gateway.yaml")
            let yaml = Gateway.yaml(section: section, redis: redis, upstream: upstream, dead: dead, cas: cas)
            try yaml.write(to: file, atomically: true, encoding: .utf8)
            gateway = try GatewayUnderTest(yaml: yaml, baseDirectory: work.path, clock: .system)
        }

        static func yaml(section: String, redis: RedisServer?, upstream: UpstreamProcess, dead: ReservedPort, cas: TestCAs) -> String {
            E2EEnvironment.yaml(store: redis?.url ?? "memory", upstreamPort: upstream.port, deadPort: dead.port,
                                roots: cas.trustedRoots) + section + "\n"
        }

        /// Rewrites the section and reloads (as SIGHUP does).
        func reload(section: String) throws {
            try Gateway.yaml(section: section, redis: redis, upstream: upstream, dead: dead, cas: cas)
                .write(to: file, atomically: true, encoding: .utf8)
            let report = gateway.runtime.reload(path: file.path)
            XCTAssertTrue(report.succeeded, "reload: \(report.errors)")
        }

        var jwksURL: String { "http://127.0.0.1:\(port)/app-attest/v1/jwks.json" }

        func stop() {
            gateway.stop()
            upstream.stop()
            redis?.stop()
            try? FileManager.default.removeItem(at: work)
        }
    }

    /// One request as the upstream received it: its token (nil when none) and what it was for.
    struct Forwarded {
        let token: String?
        let tokens: [String]
        let verdict: String?
        let method: String
        let target: String
        let body: [UInt8]
    }

    /// Sends through the gateway and reads back what the upstream saw.
    static func forward(_ gateway: Gateway, _ method: String, _ target: String, body: [UInt8] = [],
                        headers: [(String, String)] = [], via: ClientTransport? = nil,
                        file: StaticString = #filePath, line: UInt = #line) throws -> Forwarded {
        let reply = try gateway.send(method, target, headers: headers, body: body.isEmpty ? nil : body, via: via)
        XCTAssertEqual(reply.status, 200, "\(method) \(target): \(reply)", file: file, line: line)
        let seen = (reply.json["headers"] as? [[String]]) ?? []
        func values(_ name: String) -> [String] { seen.filter { $0.first?.lowercased() == name.lowercased() }.map { $0[1] } }
        let tokens = values("App-Attest-Verdict-Token")
        return Forwarded(token: tokens.first, tokens: tokens, verdict: values("App-Attest-Verdict").first, method: method,
                         target: target, body: body)
    }

    /// What the Python snippet says about each request: `ok`, `kid`, `claims` or `error`.
    static func verify(_ requests: [(token: String, method: String, target: String, body: [UInt8])],
                       environment: [String: String], file: StaticString = #filePath, line: UInt = #line) throws -> [[String: Any]] {
        var input = ""
        for r in requests {
            let object: [String: Any] = ["token": r.token, "method": r.method, "target": r.target,
                                         "body_b64": Data(r.body).base64EncodedString()]
            input += String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self) + "\n"
        }
        let reference = SharedFixtures.packageRoot.appendingPathComponent("Config/REFERENCE.md").path
        let script = SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayTests/Fixtures/verify_verdict_token.py").path
        let result = try ChildProcess.run("python3", [script, reference, "verify"], stdin: Data(input.utf8), environment: environment)
        let lines = result.output.split(separator: "\n").filter { $0.hasPrefix("{") }
        let parsed = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        XCTAssertEqual(result.status, 0, "verify_verdict_token.py: \(result.output)", file: file, line: line)
        XCTAssertEqual(parsed.count, requests.count, "one answer per token: \(result.output)", file: file, line: line)
        guard parsed.count == requests.count else { throw SetupFailure("verify_verdict_token.py: \(result.output)") }
        return parsed
    }

    static func jwksKids(_ url: String) throws -> [String] {
        let reply = try Curl.get(url)
        guard reply.status == 200, let json = try JSONSerialization.jsonObject(with: Data(reply.text.utf8)) as? [String: Any],
              let keys = json["keys"] as? [[String: Any]] else { throw SetupFailure("JWKS \(url): \(reply)") }
        return keys.compactMap { $0["kid"] as? String }
    }

    static func kid(_ token: String) -> String? {
        guard let first = token.split(separator: ".").first, let header = VerdictTokenTests.base64URLDecode(first),
              let json = try? JSONSerialization.jsonObject(with: Data(header)) as? [String: Any] else { return nil }
        return json["kid"] as? String
    }

    /// `token` with one claim changed, the signature kept.
    static func tampered(_ token: String, claim: String, value: Any) throws -> String {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let payload = VerdictTokenTests.base64URLDecode(parts[1]),
              var claims = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] else { throw SetupFailure("token \(token)") }
        claims[claim] = value
        let encoded = try JSONSerialization.data(withJSONObject: claims).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        return "\(parts[0]).\(encoded).\(parts[2])"
    }

    override func setUpWithError() throws {
        try super.setUpWithError()
        try ChildProcess.require("python3")
        let check = try ChildProcess.run("python3", ["-c", "import jwt, cryptography"])
        XCTAssertEqual(check.status, 0, "PyJWT and cryptography are installed by scripts/setup --tests: \(check.output)")
        guard check.status == 0 else { throw SetupFailure("python3 cannot import jwt, cryptography") }
    }

    func testES256TokensVerifyWithPyJWTAcrossAKeyRotationInRedis() throws {
        let gateway = try Gateway(section: """
            verdict_token:
              issuer: attest-gateway-test
              lifetime: 120s
              rotation: 6s
              publish_ahead: 3s
              store_key: test:verdict-keys
            """, redis: true)
        defer { gateway.stop() }
        var kids: [String] = []
        waitFor("the first key set", timeout: 15) { kids = (try? Self.jwksKids(gateway.jwksURL)) ?? []; return !kids.isEmpty }
        XCTAssertEqual(try Self.jwksKids("http://127.0.0.1:\(gateway.gateway.adminPort)/jwks.json").sorted(), kids.sorted(),
                       "the admin listener serves the same JWKS")

        // A valid verdict on an enforce route.
        let device = try gateway.attestedDevice(.sim)
        let body = Array("{\"order\":1}".utf8)
        let signed = try gateway.signedRequest(device, target: "/v1/protected/orders?id=1", body: body, counter: 1)
        let valid = try gateway.send(signed)
        XCTAssertEqual(valid.status, 200, "\(valid)")
        let validSeen = (valid.json["headers"] as? [[String]] ?? []).filter { $0.first?.lowercased() == "app-attest-verdict-token" }
        XCTAssertEqual(validSeen.count, 1)
        let validToken = validSeen.first?[1] ?? ""

        // Requests until the signing key changed; each token's kid was in the JWKS fetched before it.
        var forwarded: [Forwarded] = []
        var rotatedAt: Int?
        waitFor("a token signed by the next key", timeout: 40) {
            guard let published = try? Self.jwksKids(gateway.jwksURL),
                  let seen = try? Self.forward(gateway, "POST", "/v1/monitored/items?n=\(forwarded.count)", body: Array("b\(forwarded.count)".utf8)),
                  let token = seen.token, let kid = Self.kid(token) else { return false }
            XCTAssertTrue(published.contains(kid), "token kid \(kid) was published before it signed: \(published)")
            forwarded.append(seen)
            if kid != Self.kid(forwarded[0].token ?? "") { rotatedAt = forwarded.count - 1; return true }
            usleep(250_000)
            return false
        }
        guard let rotatedAt else { return }
        let oldToken = forwarded[0].token ?? ""
        let newToken = forwarded[rotatedAt].token ?? ""

        // The snippet, fresh (no cached JWKS), after the rotation: old and new tokens verify.
        let environment = ["VERDICT_JWKS_URL": gateway.jwksURL]
        var requests = forwarded.map { ($0.token ?? "", $0.method, $0.target, $0.body) }
        requests.append((validToken, "POST", "/v1/protected/orders?id=1", body))
        // Failing variants.
        let stranger = try VerdictSigningKey(es256: try ECPrivateKey(generatingOn: .p256))
        let strangerPayload = Array((try Self.tampered(oldToken, claim: "verdict", value: "valid")).split(separator: ".")[1].utf8)
        let unknownKid = String(decoding: try stranger.sign(payload: VerdictTokenTests.base64URLDecode(Substring(String(decoding: strangerPayload, as: UTF8.self))) ?? []), as: UTF8.self)
        requests.append((try Self.tampered(oldToken, claim: "verdict", value: "valid"), forwarded[0].method, forwarded[0].target, forwarded[0].body))
        requests.append((unknownKid, forwarded[0].method, forwarded[0].target, forwarded[0].body))
        requests.append((newToken, "POST", "/v1/monitored/other", forwarded[rotatedAt].body))
        requests.append((newToken, forwarded[rotatedAt].method, forwarded[rotatedAt].target, Array("another body".utf8)))
        let results = try Self.verify(requests, environment: environment)

        for (index, result) in results.prefix(forwarded.count).enumerated() {
            XCTAssertEqual(result["ok"] as? Bool, true, "token \(index): \(result)")
            let claims = result["claims"] as? [String: Any] ?? [:]
            XCTAssertEqual(claims["verdict"] as? String, "missing")
            XCTAssertEqual(claims["reason"] as? String, "assertion_missing")
            XCTAssertEqual(claims["iss"] as? String, "attest-gateway-test")
            XCTAssertEqual((claims["exp"] as? Int ?? 0) - (claims["iat"] as? Int ?? 0), 120)
        }
        XCTAssertEqual(results[0]["kid"] as? String, Self.kid(oldToken))
        XCTAssertNotEqual(Self.kid(oldToken), Self.kid(newToken))
        let validResult = results[forwarded.count]
        XCTAssertEqual(validResult["ok"] as? Bool, true, "\(validResult)")
        let validClaims = validResult["claims"] as? [String: Any] ?? [:]
        XCTAssertEqual(validClaims["verdict"] as? String, "valid")
        XCTAssertEqual(validClaims["keyId"] as? String, device.keyId)
        XCTAssertEqual(validClaims["counter"] as? Int, 1)
        XCTAssertEqual(validClaims["tier"] as? String, "attested", "the effective tier, as App-Attest-Tier says")
        XCTAssertEqual(validClaims["environment"] as? String, "development")
        XCTAssertEqual(validClaims["app"] as? String, E2EEnvironment.appId)
        let failures = results.suffix(4).map { "\($0["error"] ?? "accepted")" }
        XCTAssertEqual(failures, ["InvalidSignatureError", "PyJWKClientError", "InvalidTokenError", "InvalidTokenError"],
                       "\(results.suffix(4))")

        // Every kid is the RFC 7638 thumbprint of its key (computed by Python).
        let thumbprints = try ChildProcess.run("python3", [
            SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayTests/Fixtures/verify_verdict_token.py").path,
            SharedFixtures.packageRoot.appendingPathComponent("Config/REFERENCE.md").path, "thumbprints", gateway.jwksURL])
        XCTAssertTrue(thumbprints.output.contains("\"mismatches\": []"), thumbprints.output)
        // One key set for the fleet, in Redis.
        XCTAssertFalse(try gateway.redis!.cli("HGET", "test:verdict-keys", "doc").isEmpty)
    }

    func testNoKeyUntilTheStoreAnswersThenKeysOutliveAnOutage() throws {
        let gateway = try Gateway(section: """
            verdict_token:
              rotation: 1h
              publish_ahead: 1s
            """, redis: true, redisDown: true)
        defer { gateway.stop() }
        // Redis down since the start: no key, so monitor forwards without a token and the JWKS is empty.
        let before = try Self.forward(gateway, "GET", "/v1/monitored/a")
        XCTAssertEqual(before.verdict, "missing")
        XCTAssertEqual(before.tokens, [])
        XCTAssertEqual(try Self.jwksKids(gateway.jwksURL), [])
        // Redis back: the gateway creates the fleet's set on its next look (every 250 ms here).
        try gateway.redis?.start()
        var kids: [String] = []
        waitFor("the key set once Redis answers", timeout: 15) {
            kids = (try? Self.jwksKids(gateway.jwksURL)) ?? []
            return !kids.isEmpty
        }
        let during = try Self.forward(gateway, "GET", "/v1/monitored/b")
        XCTAssertEqual(during.token.flatMap(Self.kid), kids.first)
        // Redis down again: the keys in memory keep signing.
        gateway.redis?.stop()
        let after = try Self.forward(gateway, "GET", "/v1/monitored/c")
        XCTAssertEqual(after.token.flatMap(Self.kid), kids.first)
        let results = try Self.verify([(after.token ?? "", "GET", "/v1/monitored/c", [])], environment: ["VERDICT_JWKS_URL": gateway.jwksURL])
        XCTAssertEqual(results[0]["ok"] as? Bool, true, "\(results)")
    }

    /// Probe: Redis down at start, then back. With `publish_ahead: 1h` the key timer looks once a
    /// minute, and every valid enforced request answered 503 after its challenge and counter were
    /// spent (its retry: `401 challenge_unknown`). Now a request that finds no key is refused before
    /// anything is consumed, the signer reads the store at once, and the same request passes.
    func testWithoutKeysAnEnforcedRequestIsRefusedBeforeItIsConsumedAndTheKeysAreReadAtOnce() throws {
        let gateway = try Gateway(section: """
            verdict_token:
              rotation: 24h
              publish_ahead: 1h
            """, redis: true, redisDown: true)
        defer { gateway.stop() }
        try gateway.redis?.start()
        let device = try gateway.attestedDevice(E2EPaths.hasRefDevice ? .ref : .sim)
        let signed = try gateway.signedRequest(device, target: "/v1/protected/v", counter: 1)
        var statuses: [Int] = []
        waitFor("the signed request passes once the keys are read", timeout: 15) {
            let status = (try? gateway.send(signed).status) ?? 0
            statuses.append(status)
            return status == 200 || status == 401
        }
        XCTAssertEqual(statuses.first, 503, "no key yet: refused (\(statuses))")
        XCTAssertEqual(statuses.last, 200, "the same evidence passes: nothing was consumed by the refusals (\(statuses))")
        XCTAssertTrue(statuses.dropLast().allSatisfy { $0 == 503 }, "\(statuses)")
        XCTAssertEqual(try Self.jwksKids(gateway.jwksURL).count, 1)
    }

    /// Probe: a reload that changed any field of a generated section built a signer with no keys, so
    /// the JWKS read `{"keys":[]}` (cacheable for a minute) until the store was read again, and with
    /// Redis down nothing signed. The section's keys (same `store_key`) now carry over.
    func testAReloadThatChangesTheSectionKeepsItsKeysWhileTheStoreIsDown() throws {
        let gateway = try Gateway(section: """
            verdict_token:
              rotation: 1h
              publish_ahead: 10m
            """, redis: true)
        defer { gateway.stop() }
        var kids: [String] = []
        waitFor("the key set", timeout: 15) {
            kids = (try? Self.jwksKids(gateway.jwksURL)) ?? []
            return !kids.isEmpty
        }
        gateway.redis?.stop()
        try gateway.reload(section: """
            verdict_token:
              rotation: 1h
              publish_ahead: 10m
              issuer: gw-test
            """)
        XCTAssertEqual(try Self.jwksKids(gateway.jwksURL), kids, "published without a store read")
        let forwarded = try Self.forward(gateway, "GET", "/v1/monitored/after-reload")
        XCTAssertEqual(forwarded.token.flatMap(Self.kid), kids.first, "still signing")
        // Failing variant: another store_key is another fleet's set: nothing to carry over.
        try gateway.reload(section: """
            verdict_token:
              rotation: 1h
              publish_ahead: 10m
              store_key: test:another-fleet
            """)
        XCTAssertEqual(try Self.jwksKids(gateway.jwksURL), [], "a new fleet's keys come from the store (down)")
    }

    func testKeyFilesSignWithTheFirstPublishAllAndTokensExpire() throws {
        let folder = try E2EPaths.temporaryDirectory("verdict-keys")
        defer { try? FileManager.default.removeItem(at: folder) }
        let current = try ECPrivateKey(generatingOn: .p256)
        let next = try ECPrivateKey(generatingOn: .p256)
        try current.pkcs8PEM().write(to: folder.appendingPathComponent("current.pem"), atomically: true, encoding: .utf8)
        try next.pkcs8PEM().write(to: folder.appendingPathComponent("next.pem"), atomically: true, encoding: .utf8)
        let gateway = try Gateway(section: """
            verdict_token:
              lifetime: 1s
              key_files: [\(folder.path)/current.pem, \(folder.path)/next.pem]
            """, redis: false)
        defer { gateway.stop() }
        let currentKid = try VerdictSigningKey(es256: current).kid
        XCTAssertEqual(try Self.jwksKids(gateway.jwksURL), [currentKid, try VerdictSigningKey(es256: next).kid])
        let seen = try Self.forward(gateway, "GET", "/v1/monitored/a?b=c")
        let token = try XCTUnwrap(seen.token)
        XCTAssertEqual(Self.kid(token), currentKid)
        // The token expires: the snippet refuses it once exp has passed (polled, no fixed wait).
        var last: [String: Any] = [:]
        waitFor("the token to expire", timeout: 15) {
            last = (try? Self.verify([(token, "GET", "/v1/monitored/a?b=c", [])], environment: ["VERDICT_JWKS_URL": gateway.jwksURL]))?.first ?? [:]
            if last["ok"] as? Bool == true { usleep(300_000) }
            return last["error"] as? String == "ExpiredSignatureError"
        }
        XCTAssertEqual(last["error"] as? String, "ExpiredSignatureError", "\(last)")
    }

    func testHS256TokensVerifyAcrossASecretRotation() throws {
        let secrets = ["s1": "the first shared secret, 32 bytes+", "s2": "the second shared secret, 32 bytes+"]
        let folder = try E2EPaths.temporaryDirectory("verdict-secrets")
        defer { try? FileManager.default.removeItem(at: folder) }
        for (kid, secret) in secrets {
            try (secret + "\n").write(to: folder.appendingPathComponent(kid), atomically: true, encoding: .utf8)
        }
        func section(_ kid: String) -> String {
            "verdict_token:\n  algorithm: HS256\n  secret_file: \(folder.path)/\(kid)\n  key_id: \(kid)\n"
        }
        let gateway = try Gateway(section: section("s1"), redis: false)
        defer { gateway.stop() }
        let before = try Self.forward(gateway, "POST", "/v1/monitored/x", body: [1, 2, 3], via: .h2c)
        try gateway.reload(section: section("s2"))
        let after = try Self.forward(gateway, "POST", "/v1/monitored/y", body: [4])
        let old = try XCTUnwrap(before.token), new = try XCTUnwrap(after.token)
        XCTAssertEqual(Self.kid(old), "s1")
        XCTAssertEqual(Self.kid(new), "s2")
        XCTAssertEqual((try Self.jwksKids(gateway.jwksURL)), [], "secrets are never published")

        let both = ["VERDICT_SECRET_IDS": "s1 s2", "VERDICT_SECRET_s1": secrets["s1"]!, "VERDICT_SECRET_s2": secrets["s2"]!]
        let results = try Self.verify([
            (old, "POST", "/v1/monitored/x", [1, 2, 3]),
            (new, "POST", "/v1/monitored/y", [4]),
            (try Self.tampered(new, claim: "target", value: "/v1/monitored/z"), "POST", "/v1/monitored/z", [4]),
            (new, "POST", "/v1/monitored/y", [5]),
        ], environment: both)
        XCTAssertEqual(results.map { $0["ok"] as? Bool }, [true, true, false, false], "\(results)")
        XCTAssertEqual(results[2]["error"] as? String, "InvalidSignatureError")
        XCTAssertEqual(results[3]["error"] as? String, "InvalidTokenError")
        XCTAssertEqual((results[0]["claims"] as? [String: Any])?["verdict"] as? String, "missing")
        // Once the upstream dropped s1: the old token's kid is unknown; a wrong secret fails the signature.
        let onlyNew = try Self.verify([(old, "POST", "/v1/monitored/x", [1, 2, 3])],
                                      environment: ["VERDICT_SECRET_IDS": "s2", "VERDICT_SECRET_s2": secrets["s2"]!])
        XCTAssertEqual(onlyNew[0]["error"] as? String, "InvalidKeyError", "\(onlyNew)")
        let wrong = try Self.verify([(old, "POST", "/v1/monitored/x", [1, 2, 3])],
                                    environment: ["VERDICT_SECRET_IDS": "s1", "VERDICT_SECRET_s1": secrets["s2"]!])
        XCTAssertEqual(wrong[0]["error"] as? String, "InvalidSignatureError", "\(wrong)")

        // An expired HS256 token is refused (lifetime 1s after a reload; polled, no fixed wait).
        try gateway.reload(section: section("s2") + "  lifetime: 1s\n")
        let short = try XCTUnwrap(try Self.forward(gateway, "GET", "/v1/monitored/short").token)
        var last: [String: Any] = [:]
        waitFor("the HS256 token to expire", timeout: 15) {
            last = (try? Self.verify([(short, "GET", "/v1/monitored/short", [])], environment: both))?.first ?? [:]
            if last["ok"] as? Bool == true { usleep(300_000) }
            return last["error"] as? String == "ExpiredSignatureError"
        }
        XCTAssertEqual(last["error"] as? String, "ExpiredSignatureError", "\(last)")
    }

    func testAClientSentTokenIsStrippedOnEveryRoute() throws {
        let gateway = try Gateway(section: """
            verdict_token:
              algorithm: HS256
              secret: "a secret written inline, 32 bytes long"
              key_id: inline
            """, redis: false)
        defer { gateway.stop() }
        let forged = [("App-Attest-Verdict-Token", "forged.by.client"), ("app-attest-verdict-token", "forged.again.client")]
        let overHTTP2 = try Self.forward(gateway, "GET", "/v1/monitored/h2", headers: forged, via: .h2c)
        XCTAssertEqual(overHTTP2.tokens.count, 1, "HTTP/2: \(overHTTP2.tokens)")
        XCTAssertEqual(Self.kid(overHTTP2.token ?? ""), "inline")
        let open = try Self.forward(gateway, "GET", "/v1/open/x", headers: forged)
        XCTAssertEqual(open.tokens, [], "off routes get no token and no client copy")
        XCTAssertNil(open.verdict)
        let monitored = try Self.forward(gateway, "GET", "/v1/monitored/x", headers: forged)
        XCTAssertEqual(monitored.tokens.count, 1, "\(monitored.tokens)")
        XCTAssertEqual(Self.kid(monitored.token ?? ""), "inline")
        XCTAssertFalse(monitored.tokens.contains { $0.contains("forged") })
        XCTAssertEqual(try gateway.send("POST", "/app-attest/v1/jwks.json").status, 405)
        XCTAssertEqual(try gateway.send("GET", "/app-attest/v1/jwks.json").status, 200)
        // Failing variant: without verdict_token, monitored requests get no token either.
        let plain = try Gateway(section: "", redis: false)
        defer { plain.stop() }
        XCTAssertEqual(try Self.forward(plain, "GET", "/v1/monitored/x", headers: forged).tokens, [])
        XCTAssertEqual(try plain.send("GET", "/app-attest/v1/jwks.json").status, 404)
    }
}
