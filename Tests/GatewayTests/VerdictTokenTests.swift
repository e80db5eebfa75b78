import AppAttest
import AttestCrypto
import Dispatch
import Foundation
@testable import Gateway
import GatewayConfig
import GatewayHTTP
import GatewayRules
import GatewayStore
import Synchronization
import XCTest

/// Verdict tokens as the gateway writes them (`VerdictSigningKey`, `VerdictClaims`,
/// `VerdictTokenIssuer`), checked with AttestCrypto's verifier and an HMAC recomputed here; the
/// independent check with PyJWT is `VerdictTokenPythonTests`.
final class VerdictTokenTests: XCTestCase {
    /// The three parts of a compact JWS, decoded.
    struct Parts {
        let header: [String: Any]
        let claims: [String: Any]
        let signingInput: [UInt8]
        let signature: [UInt8]
    }

    static func base64URLDecode(_ text: Substring) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map { Array($0) }
    }

    static func parts(_ token: [UInt8]) throws -> Parts {
        let text = String(decoding: token, as: UTF8.self)
        let pieces = text.split(separator: ".", omittingEmptySubsequences: false)
        guard pieces.count == 3, let h = base64URLDecode(pieces[0]), let c = base64URLDecode(pieces[1]),
              let s = base64URLDecode(pieces[2]),
              let header = try JSONSerialization.jsonObject(with: Data(h)) as? [String: Any],
              let claims = try JSONSerialization.jsonObject(with: Data(c)) as? [String: Any] else {
            throw SetupFailureError("not a compact JWS: \(text)")
        }
        return Parts(header: header, claims: claims, signingInput: Array("\(pieces[0]).\(pieces[1])".utf8), signature: s)
    }

    struct SetupFailureError: Error { let message: String; init(_ m: String) { message = m } }

    static func request(method: HTTPMethod = .post, target: String = "/v1/orders?id=7", body: [UInt8] = Array("{\"n\":1}".utf8)) throws -> HTTPRequest {
        var headers = HTTPHeaders()
        try headers.add(name: "Host", value: "api.example")
        let head = try HTTPRequestHead(method: method, target: target, headers: headers,
                                       framing: body.isEmpty ? .none : .contentLength(body.count))
        return HTTPRequest(head: head, body: body, connection: HTTPConnectionInfo(id: 1, remoteAddress: "127.0.0.1:1", localAddress: "127.0.0.1:2"))
    }

    static func validReport() throws -> VerdictReport {
        var report = VerdictReport(.valid, keyId: try KeyID([UInt8](repeating: 7, count: 32)))
        report.counter = 42
        report.environment = "production"
        report.tier = "attested"
        report.appId = "ABCDE12345.com.example.app"
        return report
    }

    func testES256TokenVerifiesWithItsPublicKeyAndCarriesTheVerdictClaims() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let signing = try VerdictSigningKey(es256: key)
        let body = Array("{\"n\":1}".utf8)
        let payload = try VerdictClaims.payload(report: try Self.validReport(), method: Array("POST".utf8),
                                                target: Array("/v1/orders?id=7".utf8), bodySHA256: SHA256.hash(body),
                                                risk: "3", issuer: "gw", issuedAt: 1_767_225_600, lifetime: 60)
        let token = try signing.sign(payload: payload)
        let parts = try Self.parts(token)
        XCTAssertEqual(parts.header["alg"] as? String, "ES256")
        XCTAssertEqual(parts.header["typ"] as? String, "JWT")
        XCTAssertEqual(parts.header["kid"] as? String, signing.kid)
        XCTAssertEqual(parts.signature.count, 64, "JWS ES256 is r || s")
        let publicKey = try key.publicKey()
        let der = try ECDSASignature.der(fromFixedWidth: parts.signature)
        XCTAssertEqual(publicKey.verify(signature: der, message: parts.signingInput), .valid)
        // Failing variants: a changed claim, a changed signature.
        var tampered = parts.signingInput
        tampered[tampered.count - 3] ^= 0x01
        XCTAssertNotEqual(publicKey.verify(signature: der, message: tampered), .valid)
        var badSignature = parts.signature
        badSignature[10] ^= 0x80
        XCTAssertNotEqual(publicKey.verify(signature: try ECDSASignature.der(fromFixedWidth: badSignature), message: parts.signingInput), .valid)

        let c = parts.claims
        XCTAssertEqual(c["verdict"] as? String, "valid")
        XCTAssertEqual(c["keyId"] as? String, Data([UInt8](repeating: 7, count: 32)).base64EncodedString())
        XCTAssertEqual(c["counter"] as? Int, 42)
        XCTAssertEqual(c["tier"] as? String, "attested")
        XCTAssertEqual(c["environment"] as? String, "production")
        XCTAssertEqual(c["app"] as? String, "ABCDE12345.com.example.app")
        XCTAssertEqual(c["risk"] as? String, "3")
        XCTAssertEqual(c["method"] as? String, "POST")
        XCTAssertEqual(c["target"] as? String, "/v1/orders?id=7")
        XCTAssertEqual(c["bodySha256"] as? String, Data(SHA256.hash(body)).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: ""))
        XCTAssertEqual(c["iss"] as? String, "gw")
        XCTAssertEqual(c["iat"] as? Int, 1_767_225_600)
        XCTAssertEqual(c["exp"] as? Int, 1_767_225_660)
        XCTAssertEqual((c["jti"] as? String)?.count, 22)
        XCTAssertNil(c["reason"])
    }

    func testOneKeySignsFromManyThreadsAtOnce() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let signing = try VerdictSigningKey(es256: key)
        let publicKey = try key.publicKey()
        let tokens = Mutex<[[UInt8]]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<25 {
                if let token = try? signing.sign(payload: Array("{\"t\":\(thread),\"i\":\(i)}".utf8)) {
                    tokens.withLock { $0.append(token) }
                }
            }
        }
        let all = tokens.withLock { $0 }
        XCTAssertEqual(all.count, 200)
        for token in all {
            let parts = try Self.parts(token)
            XCTAssertEqual(publicKey.verify(signature: try ECDSASignature.der(fromFixedWidth: parts.signature), message: parts.signingInput), .valid)
        }
    }

    func testInvalidVerdictsCarryTheReasonAndNoKeyFacts() throws {
        var report = VerdictReport(.invalid, reason: "bad_signature", keyId: try KeyID([UInt8](repeating: 1, count: 32)))
        report.counter = 9
        let payload = try VerdictClaims.payload(report: report, method: Array("GET".utf8), target: Array("/".utf8),
                                                bodySHA256: ClientDataBinding.emptyBodySHA256, risk: nil, issuer: nil,
                                                issuedAt: 100, lifetime: 5)
        let claims = try JSONSerialization.jsonObject(with: Data(payload)) as? [String: Any] ?? [:]
        XCTAssertEqual(claims["verdict"] as? String, "invalid")
        XCTAssertEqual(claims["reason"] as? String, "bad_signature")
        XCTAssertNil(claims["keyId"])
        XCTAssertNil(claims["counter"])
        XCTAssertNil(claims["risk"])
        XCTAssertNil(claims["iss"])
        XCTAssertEqual(claims["bodySha256"] as? String, "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU")
        XCTAssertEqual(claims["exp"] as? Int, 105)
        // jti differs token to token.
        let again = try VerdictClaims.payload(report: report, method: Array("GET".utf8), target: Array("/".utf8),
                                              bodySHA256: ClientDataBinding.emptyBodySHA256, risk: nil, issuer: nil,
                                              issuedAt: 100, lifetime: 5)
        XCTAssertNotEqual(payload, again)
    }

    func testHS256TokenIsTheHMACOfItsSigningInputUnderTheSecret() throws {
        let secret = Array("0123456789abcdef0123456789abcdef".utf8)
        let signing = VerdictSigningKey(hs256: secret, kid: "2026-12")
        let token = try signing.sign(payload: Array("{\"verdict\":\"missing\"}".utf8))
        let parts = try Self.parts(token)
        XCTAssertEqual(parts.header["alg"] as? String, "HS256")
        XCTAssertEqual(parts.header["kid"] as? String, "2026-12")
        XCTAssertEqual(parts.signature, HMACSHA256.authenticationCode(key: secret, message: parts.signingInput))
        XCTAssertNotEqual(parts.signature, HMACSHA256.authenticationCode(key: Array("another secret of 32 bytes.......".utf8), message: parts.signingInput))
        var json = JSONWriter()
        json.beginArray()
        signing.writeJWK(&json)
        json.endArray()
        XCTAssertEqual(json.text, "[]", "an HS256 secret is never published")
    }

    func testFixedWidthSignaturesRoundTripThroughDERAndMalformedInputIsRefused() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        for _ in 0..<20 {
            let der = try key.signature(for: Array("m".utf8))
            let raw = try ECDSASignature.fixedWidth(fromDER: der, scalarBytes: 32)
            XCTAssertEqual(raw.count, 64)
            XCTAssertEqual(try ECDSASignature.der(fromFixedWidth: raw), der)
        }
        XCTAssertThrowsError(try ECDSASignature.fixedWidth(fromDER: [0x30, 0x03, 0x02, 0x01], scalarBytes: 32))
        XCTAssertThrowsError(try ECDSASignature.fixedWidth(fromDER: try key.signature(for: [1]) + [0], scalarBytes: 32))
        XCTAssertThrowsError(try ECDSASignature.der(fromFixedWidth: [1, 2, 3]))
    }

    func testTheIssuerPicksTheAppsSectionForItsValidKeysAndTheTopLevelOneOtherwise() throws {
        let clock = GatewayClock { 1_767_225_600_000 }
        let store = MemoryStore()
        let topLevel = VerdictTokenConfiguration(algorithm: .hs256, secret: Array("top-level secret, 32 bytes long!".utf8), keyID: "top")
        let appLevel = VerdictTokenConfiguration(algorithm: .hs256, secret: Array("the app's own secret, 32 bytes..".utf8), keyID: "app")
        let issuer = VerdictTokenIssuer(headerName: "App-Attest-Verdict-Token",
                                        gateway: try VerdictTokenSigner(configuration: topLevel, path: "verdict_token", clock: clock, store: store, events: nil),
                                        apps: ["ABCDE12345.com.example.app": try VerdictTokenSigner(configuration: appLevel, path: "apps[0].verdict_token", clock: clock, store: store, events: nil)],
                                        signers: [])
        let request = try Self.request()
        var headers = HTTPHeaders()
        XCTAssertEqual(issuer.attach(to: &headers, report: try Self.validReport(), request: request, riskHeader: "App-Attest-Risk-Metric"), .attached)
        XCTAssertEqual(try Self.parts(Array(headers.first("App-Attest-Verdict-Token")!.utf8)).header["kid"] as? String, "app")
        var other = HTTPHeaders()
        XCTAssertEqual(issuer.attach(to: &other, report: VerdictReport(.missing, reason: "assertion_missing"), request: request,
                                     riskHeader: "App-Attest-Risk-Metric"), .attached)
        let parts = try Self.parts(Array(other.first("App-Attest-Verdict-Token")!.utf8))
        XCTAssertEqual(parts.header["kid"] as? String, "top")
        XCTAssertEqual(parts.claims["iat"] as? Int, 1_767_225_600)
        XCTAssertEqual(parts.claims["exp"] as? Int, 1_767_225_660)
        XCTAssertEqual(parts.claims["target"] as? String, "/v1/orders?id=7")
        // Without a top-level section, a request of no configured app gets no token.
        let appsOnly = VerdictTokenIssuer(headerName: "App-Attest-Verdict-Token", gateway: nil, apps: issuer.apps, signers: [])
        var none = HTTPHeaders()
        XCTAssertEqual(appsOnly.attach(to: &none, report: VerdictReport(.missing), request: request, riskHeader: "x"), .notConfigured)
        XCTAssertNil(none.first("App-Attest-Verdict-Token"))
    }

    func testCheckConfigReportsAKeyFileThatCannotSign() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("verdict-check-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try ECPrivateKey(generatingOn: .p256).pkcs8PEM().write(to: folder.appendingPathComponent("good.pem"), atomically: true, encoding: .utf8)
        try ECPrivateKey(generatingOn: .p384).pkcs8PEM().write(to: folder.appendingPathComponent("p384.pem"), atomically: true, encoding: .utf8)
        try "not a key".write(to: folder.appendingPathComponent("text.pem"), atomically: true, encoding: .utf8)
        func check(_ files: String) throws -> Result<LoadedConfiguration, ConfigError> {
            let file = folder.appendingPathComponent("gateway.yaml")
            try """
                listen: 127.0.0.1:8080
                apps: [{app_id: ABCDE12345.com.example.app}]
                upstreams: {app: "http://127.0.0.1:8081"}
                routes: [{path_prefix: /, upstream: app}]
                verdict_token: {key_files: [\(files)]}
                """.write(to: file, atomically: true, encoding: .utf8)
            return ConfigCheckReport.validate(path: file.path, checkFiles: { TLSFileChecker.check($0) })
        }
        if case .failure(let error) = try check("good.pem") { XCTFail("\(error)") }
        guard case .failure(let error) = try check("good.pem, p384.pem, text.pem, absent.pem") else { return XCTFail("bad key files accepted") }
        let lines = error.issues.map { "\($0.path): \($0.message)" }
        XCTAssertEqual(lines.count, 3, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("verdict_token.key_files[1]: ") && $0.contains("not a P-256 key") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("verdict_token.key_files[2]: ") && $0.contains("not an unencrypted PEM private key") }, "\(lines)")
        XCTAssertTrue(lines.contains { $0.hasPrefix("verdict_token.key_files[3]: cannot read") }, "\(lines)")
    }

    /// Not a timing assertion: prints what one token costs on this machine (claims, base64url,
    /// signature), for the README.
    func testPrintsMicrosecondsPerToken() throws {
        let es = try VerdictSigningKey(es256: try ECPrivateKey(generatingOn: .p256))
        let hs = VerdictSigningKey(hs256: Array("0123456789abcdef0123456789abcdef".utf8), kid: "k")
        let report = try Self.validReport()
        let body = SHA256.hash(Array("{\"n\":1}".utf8))
        for (name, key) in [("ES256", es), ("HS256", hs)] {
            let rounds = 2_000
            var bytes = 0
            let start = GatewayClock.monotonicNanoseconds()
            for i in 0..<rounds {
                let payload = try VerdictClaims.payload(report: report, method: Array("POST".utf8), target: Array("/v1/orders".utf8),
                                                        bodySHA256: body, risk: nil, issuer: nil, issuedAt: Int64(i), lifetime: 60)
                bytes += try key.sign(payload: payload).count
            }
            let micros = Double(GatewayClock.monotonicNanoseconds() - start) / 1_000 / Double(rounds)
            print("verdict token \(name): \(String(format: "%.1f", micros)) µs per token (claims + sign), \(bytes / rounds) bytes")
            XCTAssertGreaterThan(bytes, 0)
        }
    }
}
