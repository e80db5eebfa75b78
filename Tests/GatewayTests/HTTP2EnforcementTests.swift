import Foundation
import GatewayTestSupport
import XCTest

/// The composed gateway over HTTP/2 with prior knowledge (h2c, curl `--http2-prior-knowledge` and the
/// h2 Python client): an enforced route behaves exactly as over HTTP/1.1 (DESIGN.md section 5,
/// "HTTP/2 carries the same semantics").
final class HTTP2EnforcementTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }

    func testValidAssertionForwardedWithVerdictHeadersOverH2() throws {
        let device = try env.attestedDevice(.sim)
        let body = Array("h2-payload".utf8)
        let signed = try env.signedRequest(device, target: "/v1/protected/h2?q=1", body: body, counter: 1)
        let reply = try env.send(signed, extraHeaders: HeaderStripTests.forged, via: .h2c)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        guard let echo = reply.echo else { return XCTFail("no echo: \(reply)") }
        XCTAssertEqual(echo.method, "POST")
        XCTAssertEqual(echo.target, "/v1/protected/h2?q=1", "the signed :path is what is forwarded")
        XCTAssertEqual(echo.bodySHA256, sha256Hex(body))
        XCTAssertEqual(echo.values("Content-Length"), ["\(body.count)"], "re-framed with one Content-Length")
        XCTAssertEqual(echo.values("App-Attest-Verdict"), ["valid"], "one verdict, the gateway's")
        XCTAssertEqual(echo.values("App-Attest-Counter"), ["1"])
        XCTAssertEqual(echo.values("App-Attest-Environment"), ["development"])
        XCTAssertEqual(echo.values("App-Attest-Key-Id"), [device.keyId])
        let names = echo.fields(withPrefix: "App-Attest-").map { $0.name.lowercased() }.sorted()
        XCTAssertEqual(names, ["app-attest-counter", "app-attest-environment", "app-attest-key-id", "app-attest-platform-attested",
                               "app-attest-tier", "app-attest-verdict"],
                       "every forged family field stripped, the evidence too")
        XCTAssertEqual(echo.values("Host"), ["127.0.0.1:\(env.port)"], "Host from :authority")
    }

    func testReplayRefusedWithTheSameJSONAsHTTP1() throws {
        let device = try env.attestedDevice(.sim)
        let signed = try env.signedRequest(device, target: "/v1/protected/replay", body: Array("x".utf8), counter: 1)
        XCTAssertEqual(try env.send(signed, via: .h2c).status, 200)
        let forwarded = try env.upstream.requestCount()
        let h2 = try env.send(signed, via: .h2c)
        assertChallengeRefusal(h2, code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        let h1 = try env.send(signed)
        assertChallengeRefusal(h1, code: "challenge_unknown", notBefore: env.clock.now() / 1000)
        XCTAssertEqual(Set(h2.json.keys), Set(h1.json.keys), "the same refusal body: \(h2.text) / \(h1.text)")
        for key in h1.json.keys where key != "challenge" && key != "expiresAt" {
            XCTAssertEqual(h2.json[key] as? String, h1.json[key] as? String, key)
        }
        XCTAssertEqual(h2.header("Content-Type"), h1.header("Content-Type"))
        XCTAssertEqual(h2.header("App-Attest-Error"), h1.header("App-Attest-Error"))
        XCTAssertEqual(try env.upstream.requestCount(), forwarded, "a replay never reaches the upstream")
        // Without any evidence: the same refusal over both protocols.
        let missing2 = try env.send("POST", "/v1/protected/none", headers: HeaderStripTests.forged, body: Array("x".utf8), via: .h2c)
        let missing1 = try env.send("POST", "/v1/protected/none", headers: HeaderStripTests.forged, body: Array("x".utf8))
        assertRefusal(missing2, status: 401, code: "assertion_missing")
        XCTAssertEqual(missing2.text, missing1.text)
    }

    func testFamilyFieldsInHeadersAndTrailersStrippedOverH2() throws {
        for (target, verdict) in [("/v1/open/h2-trailer", [String]()), ("/v1/monitored/h2-trailer", ["missing"])] {
            let r = try ChildProcess.run("python3", [E2EPaths.h2ClientScript, "--port", String(env.port), "forged-trailers", target])
            XCTAssertEqual(r.status, 0, r.output)
            let line = r.output.split(separator: "\n").last { $0.hasPrefix("{") }.map(String.init) ?? ""
            let result = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], r.output)
            XCTAssertEqual(result["status"] as? Int, 200, r.output)
            let reply = HTTPReply(status: 200, headers: [], body: Array((result["body"] as? String ?? "").utf8))
            guard let echo = reply.echo else { XCTFail("no echo: \(r.output)"); continue }
            XCTAssertEqual(echo.bodySHA256, sha256Hex(Array("abc".utf8)))
            XCTAssertEqual(echo.values("App-Attest-Verdict"), verdict, "\(target): \(echo.headers)")
            XCTAssertEqual(echo.values("App-Attest-Key-Id"), [], "\(target): \(echo.headers)")
            XCTAssertEqual(echo.values("App-Attest-Counter"), [], "\(target): \(echo.headers)")
            XCTAssertEqual(echo.values("X-Kept"), ["yes"])
            XCTAssertEqual(echo.values("X-Trailer"), [], "trailers are never forwarded as fields")
        }
    }
}
