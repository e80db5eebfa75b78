@testable import Gateway
import XCTest

/// Request ids and W3C trace context through the whole gateway over real sockets (curl, the Python
/// upstream echoing what it received). The standard environment trusts 127.0.0.2
/// (`trusted_proxies: [127.0.0.2/32]`); curl connects from 127.0.0.1 (a client) or 127.0.0.2.
final class RequestIdentityTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }

    static let traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

    /// 32 lower-case hex digits, as the gateway mints them.
    static func isMinted(_ id: String?) -> Bool {
        guard let id else { return false }
        return id.utf8.count == 32 && id.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }

    func testAClientsIdIsReplacedByAMintedOneSentUpstreamAndReturned() throws {
        var seen: Set<String> = []
        for transport in [ClientTransport.http1, .h2c] {
            for target in ["/v1/open/id", "/v1/monitored/id"] {
                let reply = try Curl.request(port: env.port, method: "GET", target: target,
                                             headers: [("X-Request-Id", "client-chosen"), ("x-request-id", "second")],
                                             transport: transport)
                XCTAssertEqual(reply.status, 200, "\(reply)")
                let upstream = reply.echo?.values("X-Request-Id") ?? []
                XCTAssertEqual(upstream.count, 1, "exactly one id upstream: \(reply)")
                XCTAssertTrue(RequestIdentityTests.isMinted(upstream.first), "minted, not the client's: \(upstream)")
                XCTAssertEqual(reply.headers("X-Request-Id"), upstream, "the same id returned to the client: \(reply)")
                seen.insert(upstream.first ?? "")
            }
        }
        XCTAssertEqual(seen.count, 4, "every request has its own id: \(seen)")
    }

    func testATrustedProxysIdIsKeptAndAnImplausibleOneReplaced() throws {
        let kept = try Curl.request(port: env.port, method: "GET", target: "/v1/open/id",
                                    headers: [("X-Request-Id", "lb-7f3a:42/x=y@z")], source: "127.0.0.2")
        XCTAssertEqual(kept.echo?.values("X-Request-Id"), ["lb-7f3a:42/x=y@z"], "\(kept)")
        XCTAssertEqual(kept.header("X-Request-Id"), "lb-7f3a:42/x=y@z")

        for bad in [[("X-Request-Id", "has space")], [("X-Request-Id", String(repeating: "a", count: 129))],
                    [("X-Request-Id", "a"), ("X-Request-Id", "b")]] {
            let reply = try Curl.request(port: env.port, method: "GET", target: "/v1/open/id", headers: bad, source: "127.0.0.2")
            let upstream = reply.echo?.values("X-Request-Id") ?? []
            XCTAssertEqual(upstream.count, 1, "\(bad): \(reply)")
            XCTAssertTrue(RequestIdentityTests.isMinted(upstream.first), "\(bad) is replaced: \(upstream)")
            XCTAssertEqual(reply.header("X-Request-Id"), upstream.first)
        }
        // The same id from an untrusted peer is not believed.
        let untrusted = try Curl.request(port: env.port, method: "GET", target: "/v1/open/id",
                                         headers: [("X-Request-Id", "lb-7f3a:42/x=y@z")])
        XCTAssertTrue(RequestIdentityTests.isMinted(untrusted.echo?.values("X-Request-Id").first), "\(untrusted)")
    }

    func testAnswersTheGatewayGivesItselfCarryTheId() throws {
        let refused = try Curl.request(port: env.port, method: "POST", target: "/v1/protected/x", body: Array("x".utf8))
        XCTAssertEqual(refused.status, 401)
        XCTAssertTrue(RequestIdentityTests.isMinted(refused.header("X-Request-Id")), "a refusal: \(refused)")
        let noRoute = try Curl.request(port: env.port, method: "GET", target: "/nowhere", source: "127.0.0.2",
                                       transport: .http1)
        XCTAssertEqual(noRoute.status, 404)
        XCTAssertTrue(RequestIdentityTests.isMinted(noRoute.header("X-Request-Id")), "no route: \(noRoute)")
        let down = try Curl.request(port: env.port, method: "GET", target: "/v1/down/x", headers: [("X-Request-Id", "trace-me")],
                                    source: "127.0.0.2", transport: .h2c)
        XCTAssertEqual(down.status, 502, "\(down)")
        XCTAssertEqual(down.header("X-Request-Id"), "trace-me", "an upstream failure rendered by the proxy core: \(down)")
        let tooLarge = try Curl.request(port: env.port, method: "POST", target: "/v1/open/big", body: Array(repeating: 0x61, count: 4096))
        XCTAssertEqual(tooLarge.status, 413)
        XCTAssertTrue(RequestIdentityTests.isMinted(tooLarge.header("X-Request-Id")), "a 413 after the head decision: \(tooLarge)")
        let challenge = try env.requestChallenge(keyId: Data(randomBytes(32)).base64EncodedString(), purpose: "attest")
        XCTAssertEqual(challenge.status, 201)
        XCTAssertTrue(RequestIdentityTests.isMinted(challenge.header("X-Request-Id")), "an endpoint answer: \(challenge)")
    }

    func testAValidTraceparentPassesThroughAndAnInvalidOneIsDroppedWithItsTracestate() throws {
        let state = ("tracestate", "vendor=abc")
        let valid = try Curl.request(port: env.port, method: "GET", target: "/v1/monitored/t",
                                     headers: [("traceparent", RequestIdentityTests.traceparent), state])
        XCTAssertEqual(valid.echo?.values("traceparent"), [RequestIdentityTests.traceparent], "\(valid)")
        XCTAssertEqual(valid.echo?.values("tracestate"), ["vendor=abc"])

        let invalid = [
            [("traceparent", RequestIdentityTests.traceparent.uppercased()), state],
            [("traceparent", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"), state],
            [("traceparent", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"), state],
            [("traceparent", RequestIdentityTests.traceparent + "-extra"), state],
            [("traceparent", RequestIdentityTests.traceparent), ("traceparent", RequestIdentityTests.traceparent), state],
        ]
        for headers in invalid {
            let reply = try Curl.request(port: env.port, method: "GET", target: "/v1/open/t", headers: headers, transport: .h2c)
            XCTAssertEqual(reply.status, 200, "\(reply)")
            XCTAssertEqual(reply.echo?.values("traceparent"), [], "\(headers) dropped: \(reply)")
            XCTAssertEqual(reply.echo?.values("tracestate"), [], "its tracestate too")
        }
    }
}

/// `TraceParent` against the W3C Trace Context rules, and the bounded user agent.
final class TraceParentTests: XCTestCase {
    private func trace(_ text: String) -> String? {
        TraceParent.traceID(ArraySlice(Array(text.utf8))).map { String(decoding: $0, as: UTF8.self) }
    }

    func testValidValues() {
        XCTAssertEqual(trace(RequestIdentityTests.traceparent), "4bf92f3577b34da6a3ce929d0e0e4736")
        XCTAssertEqual(trace("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-future"), "4bf92f3577b34da6a3ce929d0e0e4736",
                       "a later version may append fields after a dash")
        XCTAssertEqual(trace("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00"), "4bf92f3577b34da6a3ce929d0e0e4736")
    }

    func testInvalidValues() {
        for bad in ["", "00", RequestIdentityTests.traceparent + "-x", RequestIdentityTests.traceparent.uppercased(),
                    "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                    "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                    "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
                    "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
                    "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00x"] {
            XCTAssertNil(trace(bad), bad)
        }
    }

    func testUserAgentIsCutOnACharacterBoundary() {
        let short = ArraySlice(Array("curl/8".utf8))
        XCTAssertEqual(RequestIdentity.bounded(short), short)
        let long = Array(String(repeating: "a", count: 255).utf8) + Array("é".utf8) + Array("tail".utf8)
        let cut = RequestIdentity.bounded(ArraySlice(long))
        XCTAssertEqual(cut.count, 255, "the two-byte é straddling byte 256 is left out whole")
        XCTAssertEqual(RequestIdentity.bounded(ArraySlice(Array(repeating: 0x61, count: 1000))).count, 256)
    }

    func testMintedIdsAreHexAndDistinctPerLoop() {
        let ids = RequestIDGenerator(loops: 2)
        let minted = (0..<50).map { ids.next(loop: $0 % 2) }
        XCTAssertEqual(Set(minted).count, 50)
        XCTAssertTrue(minted.allSatisfy(RequestIdentityTests.isMinted), "\(minted.prefix(3))")
        XCTAssertFalse(RequestIdentityTests.isMinted("not-an-id"))
    }
}
