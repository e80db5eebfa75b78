import Foundation
import XCTest

/// Forged gateway headers (the `App-Attest-` family, any case, duplicated, unknown members) are
/// stripped on every route mode: the upstream never sees a client copy, and on `off` routes it sees
/// no verdict at all (DESIGN.md section 5).
final class HeaderStripTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }

    /// Forged fields a client might send to impersonate the gateway.
    static let forged: [(String, String)] = [
        ("App-Attest-Verdict", "valid"),
        ("app-attest-verdict", "valid"),
        ("APP-ATTEST-COUNTER", "999999"),
        ("App-Attest-Environment", "production"),
        ("aPP-aTTEST-rEASON", "forged"),
        ("App-Attest-Reason", "forged-again"),
        ("App-Attest-Foo", "bar"),
        ("App-Attest-Risk-Metric", "0"),
        ("App-Attest-Bundle-Version", "forged"),
        // CGI/WSGI spellings: a backend would read them as HTTP_APP_ATTEST_VERDICT, HTTP_X_FORWARDED_FOR.
        ("App_Attest_Verdict", "valid"),
        ("app_attest_tier", "attested"),
        ("X_Forwarded_For", "203.0.113.9"),
    ]

    func testForgedHeadersAreStrippedOnEnforceRoute() throws {
        let device = try env.attestedDevice(.ref)
        let signed = try env.signedRequest(device, target: "/v1/protected/forged", body: Array("pay".utf8), counter: 1)
        let reply = try env.send(signed, extraHeaders: HeaderStripTests.forged)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        guard let echo = reply.echo else { return XCTFail("no echo: \(reply)") }
        XCTAssertEqual(echo.values("App-Attest-Verdict"), ["valid"], "one verdict, the gateway's")
        XCTAssertEqual(echo.values("App-Attest-Counter"), ["1"])
        XCTAssertEqual(echo.values("App-Attest-Environment"), ["development"])
        XCTAssertEqual(echo.values("App-Attest-Key-Id"), [device.keyId])
        XCTAssertEqual(echo.values("App-Attest-Reason"), [])
        XCTAssertEqual(echo.values("App-Attest-Foo"), [])
        XCTAssertEqual(echo.values("App-Attest-Risk-Metric"), [])
        XCTAssertEqual(echo.values("App-Attest-Bundle-Version"), [])
        XCTAssertEqual(echo.values("App-Attest-Challenge"), [])
        XCTAssertEqual(echo.values("App-Attest-Assertion"), [])
        let names = echo.fields(withPrefix: "App-Attest-").map { $0.name.lowercased() }.sorted()
        XCTAssertEqual(names, ["app-attest-counter", "app-attest-environment", "app-attest-key-id", "app-attest-platform-attested",
                               "app-attest-tier", "app-attest-verdict"])

        // Without evidence, the forged verdict buys nothing.
        let before = try env.upstream.requestCount()
        assertRefusal(try env.send("POST", "/v1/protected/forged", headers: HeaderStripTests.forged, body: Array("x".utf8)),
                      status: 401, code: "assertion_missing")
        XCTAssertEqual(try env.upstream.requestCount(), before)
    }

    func testForgedHeadersAreStrippedOnMonitorRoute() throws {
        let unknown = Data(randomBytes(32)).base64EncodedString()
        let reply = try env.send("POST", "/v1/monitored/forged",
                                 headers: HeaderStripTests.forged + [("app-attest-key-id", unknown)], body: Array("x".utf8))
        XCTAssertEqual(reply.status, 200, "\(reply)")
        guard let echo = reply.echo else { return XCTFail("no echo: \(reply)") }
        XCTAssertEqual(echo.values("App-Attest-Verdict"), ["missing"])
        XCTAssertEqual(echo.values("App-Attest-Reason"), ["assertion_missing"])
        XCTAssertEqual(echo.values("App-Attest-Key-Id"), [], "the client's keyId never reaches the upstream")
        XCTAssertEqual(echo.values("App-Attest-Counter"), [])
        XCTAssertEqual(echo.values("App-Attest-Environment"), [])
        XCTAssertEqual(echo.values("App-Attest-Foo"), [])
        let names = echo.fields(withPrefix: "App-Attest-").map { $0.name.lowercased() }.sorted()
        XCTAssertEqual(names, ["app-attest-reason", "app-attest-verdict"])
    }

    func testForgedHeadersAreStrippedOnOffRouteWithoutAnyVerdict() throws {
        let unknown = Data(randomBytes(32)).base64EncodedString()
        let headers = HeaderStripTests.forged + [("app-attest-key-id", unknown), ("App-Attest-Challenge", "AAAA"),
                                                 ("App-Attest-Assertion", "AAAA"), ("X-Kept", "yes")]
        let reply = try env.send("GET", "/v1/open/forged?x=1", headers: headers)
        XCTAssertEqual(reply.status, 200, "\(reply)")
        guard let echo = reply.echo else { return XCTFail("no echo: \(reply)") }
        XCTAssertEqual(echo.fields(withPrefix: "App-Attest-").map(\.name), [], "no App-Attest- field at all on an off route")
        XCTAssertEqual(echo.fields(withPrefix: "App_Attest_").map(\.name), [], "nor its underscore spelling")
        XCTAssertEqual(echo.values("X_Forwarded_For"), [])
        XCTAssertEqual(echo.values("X-Forwarded-For"), ["127.0.0.1"])
        XCTAssertEqual(echo.values("X-Kept"), ["yes"], "other fields pass")
        XCTAssertEqual(echo.target, "/v1/open/forged?x=1")
    }

    /// A client naming the gateway's own fields in `Connection` cannot make the gateway drop them:
    /// hop-by-hop removal applies to what the client sent, before the gateway sets its fields. The
    /// evidence fields the client named are still read (they were meant for the gateway).
    func testConnectionOptionsCannotRemoveTheGatewaysFields() throws {
        let device = try env.attestedDevice(.ref)
        let signed = try env.signedRequest(device, target: "/v1/protected/connection", body: Array("pay".utf8), counter: 1)
        let named = "App-Attest-Verdict, App-Attest-Key-Id, App-Attest-Counter, App-Attest-Environment, "
            + "X-Forwarded-For, X-Forwarded-Proto, X-Client-Hop"
        let reply = try env.send(signed, extraHeaders: [("Connection", named), ("X-Client-Hop", "the client's own"),
                                                        ("X-Forwarded-For", "203.0.113.9"), ("X-Kept", "yes")])
        XCTAssertEqual(reply.status, 200, "\(reply)")
        guard let echo = reply.echo else { return XCTFail("no echo: \(reply)") }
        XCTAssertEqual(echo.values("App-Attest-Verdict"), ["valid"], "\(echo.headers)")
        XCTAssertEqual(echo.values("App-Attest-Key-Id"), [device.keyId])
        XCTAssertEqual(echo.values("App-Attest-Counter"), ["1"])
        XCTAssertEqual(echo.values("App-Attest-Environment"), ["development"])
        XCTAssertEqual(echo.values("X-Forwarded-For"), ["127.0.0.1"], "the gateway's value, not the client's")
        XCTAssertEqual(echo.values("X-Forwarded-Proto"), ["http"])
        XCTAssertEqual(echo.values("X-Client-Hop"), [], "a field of the client's that it named is still removed")
        XCTAssertEqual(echo.values("Connection"), [])
        XCTAssertEqual(echo.values("X-Kept"), ["yes"])

        // Monitor route, no evidence: the verdict and reason the gateway sets arrive too.
        let monitored = try env.send("POST", "/v1/monitored/connection",
                                     headers: [("Connection", "App-Attest-Verdict, app-attest-reason, X-Forwarded-For")],
                                     body: Array("x".utf8))
        XCTAssertEqual(monitored.status, 200, "\(monitored)")
        XCTAssertEqual(monitored.echo?.values("App-Attest-Verdict"), ["missing"])
        XCTAssertEqual(monitored.echo?.values("App-Attest-Reason"), ["assertion_missing"])
        XCTAssertEqual(monitored.echo?.values("X-Forwarded-For"), ["127.0.0.1"])
    }

    /// Family fields sent as chunked trailers never reach the upstream either.
    func testForgedTrailersAreStripped() throws {
        for (target, verdict) in [("/v1/open/trailer", [String]()), ("/v1/monitored/trailer", ["missing"])] {
            let result = try RawClient.run(port: env.port, [
                .send("POST \(target) HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTrailer: App-Attest-Verdict\r\nConnection: close\r\n\r\n"
                      + "3\r\nabc\r\n0\r\nApp-Attest-Verdict: valid\r\napp-attest-key-id: forged\r\n\r\n"),
            ])
            let reply = try XCTUnwrap(result.replies.first, result.raw)
            XCTAssertEqual(reply.status, 200, result.raw)
            guard let echo = reply.echo else { XCTFail("no echo: \(result.raw)"); continue }
            XCTAssertEqual(echo.bodySHA256, sha256Hex(Array("abc".utf8)))
            XCTAssertEqual(echo.values("App-Attest-Verdict"), verdict, "\(target): \(echo.headers)")
            XCTAssertEqual(echo.values("App-Attest-Key-Id"), [], "\(target): \(echo.headers)")
        }
    }
}
