import XCTest

/// The forwarding family (`ForwardingHeaders`) over real sockets through the whole gateway: the
/// standard environment trusts 127.0.0.2 (`trusted_proxies: [127.0.0.2/32]`); curl connects from
/// 127.0.0.1 (a client) or from 127.0.0.2 (the trusted proxy).
final class ForwardingFamilyTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }

    func testUntrustedClientCannotSpeakForTheGateway() throws {
        for target in ["/v1/open/fwd", "/v1/monitored/fwd"] {
            let reply = try Curl.request(port: env.port, method: "GET", target: target, headers: ForwardingHeadersTests.claims)
            XCTAssertEqual(reply.status, 200, "\(reply)")
            guard let echo = reply.echo else { XCTFail("no echo: \(reply)"); continue }
            XCTAssertEqual(echo.values("X-Forwarded-For"), ["127.0.0.1"], "\(target): \(echo.headers)")
            XCTAssertEqual(echo.values("X-Forwarded-Proto"), ["http"])
            for name in ["Forwarded", "X-Real-IP", "X-Forwarded-Host", "X-Forwarded-Port", "X-Forwarded-Prefix"] {
                XCTAssertEqual(echo.values(name), [], "\(target): \(name)")
            }
            XCTAssertEqual(echo.values("X-Keep"), ["yes"])
        }
    }

    func testTrustedProxyIsBelievedAndAppendedTo() throws {
        for target in ["/v1/open/fwd", "/v1/monitored/fwd"] {
            let reply = try Curl.request(port: env.port, method: "GET", target: target, headers: ForwardingHeadersTests.claims,
                                         source: "127.0.0.2")
            XCTAssertEqual(reply.status, 200, "\(reply)")
            guard let echo = reply.echo else { XCTFail("no echo: \(reply)"); continue }
            XCTAssertEqual(echo.values("X-Forwarded-For"), ["203.0.113.9, 198.51.100.1, 127.0.0.2"], "\(target): \(echo.headers)")
            XCTAssertEqual(echo.values("X-Forwarded-Proto"), ["https"], "the proxy's scheme is believed")
            XCTAssertEqual(echo.values("Forwarded"), ["for=203.0.113.9;proto=https"])
            XCTAssertEqual(echo.values("X-Real-IP"), ["203.0.113.9"])
            XCTAssertEqual(echo.values("X-Forwarded-Host"), ["admin.internal"])
        }
    }
}
