import Foundation
import XCTest

/// HTTP-level answers of the composed gateway over real sockets: body limits on chunked bodies,
/// request smuggling attempts, slow clients, a dead upstream, no route.
final class ProxyBehaviourTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }

    func testChunkedBodyOverRouteLimitIs413() throws {
        let before = try env.upstream.requestCount()
        // /v1/open takes 1KiB.
        let small = randomBytes(1000)
        let ok = try env.send("POST", "/v1/open/upload", body: small, chunked: true)
        XCTAssertEqual(ok.status, 200, "\(ok)")
        XCTAssertEqual(ok.echo?.bodySHA256, sha256Hex(small), "de-chunked and re-framed byte for byte")
        XCTAssertEqual(ok.echo?.values("Transfer-Encoding"), [], "re-framed with Content-Length")
        XCTAssertEqual(ok.echo?.values("Content-Length"), ["1000"])

        let large = try env.send("POST", "/v1/open/upload", body: randomBytes(4096), chunked: true)
        assertRefusal(large, status: 413, code: large.errorCode ?? "?")
        // /v1/protected takes 64KiB: the limit applies before any evidence is looked at.
        let protected = try env.send("POST", "/v1/protected/upload", body: randomBytes(100 * 1024), chunked: true)
        assertRefusal(protected, status: 413, code: protected.errorCode ?? "?")
        XCTAssertEqual(large.errorCode, protected.errorCode)
        XCTAssertEqual(try env.upstream.requestCount(), before + 1, "only the small body was forwarded")
    }

    func testContentLengthWithTransferEncodingIs400AndCloses() throws {
        let before = try env.upstream.requestCount()
        let result = try RawClient.run(port: env.port, [
            .send("POST /v1/open/smuggle HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /v1/open/second HTTP/1.1\r\nHost: x\r\n\r\n"),
        ])
        XCTAssertEqual(result.replies.count, 1, "one answer, the smuggled request is never read: \(result.raw)")
        XCTAssertEqual(result.replies.first?.status, 400)
        XCTAssertEqual(result.replies.first?.header("App-Attest-Error"), result.replies.first?.errorCode)
        XCTAssertTrue(result.closed, "the connection is closed")
        XCTAssertEqual(try env.upstream.requestCount(), before)
    }

    /// RFC 9112 section 3.2 / RFC 9110 section 7.2: a Host that is not `host[:port]`, empty, duplicated
    /// or missing (HTTP/1.1) is `400 host_invalid` (action `deny`), never forwarded.
    func testInvalidHostIs400AndNeverForwarded() throws {
        let before = try env.upstream.requestCount()
        for host in ["Host: a b\r\n", "Host: a/b\r\n", "Host: \r\n", "Host: x\r\nHost: x\r\n", "Host: x\r\nhost: y\r\n", "",
                     "Host: x:99999\r\n", "Host: user@x\r\n"] {
            let result = try RawClient.run(port: env.port, [.send("GET /v1/open/host HTTP/1.1\r\n\(host)\r\n")])
            let reply = try XCTUnwrap(result.replies.first, "\(host.debugDescription): \(result.raw)")
            assertRefusal(reply, status: 400, code: "host_invalid", action: "deny")
            XCTAssertEqual(reply.header("App-Attest-Error"), "host_invalid")
            XCTAssertTrue(result.closed, host.debugDescription)
        }
        XCTAssertEqual(try env.upstream.requestCount(), before, "none reached the upstream")
        let good = try RawClient.run(port: env.port, [.send("GET /v1/open/host HTTP/1.1\r\nHost: api.example.com:8443\r\nConnection: close\r\n\r\n")])
        XCTAssertEqual(good.replies.first?.status, 200, good.raw)
        XCTAssertEqual(good.replies.first?.echo?.values("Host"), ["api.example.com:8443"])
    }

    func testSlowHeadersAre408() throws {
        // timeouts.header is 1s. The head never completes; the client reads until the gateway answers
        // and closes (at most 15 s), so no sleep races the timer.
        let result = try RawClient.run(port: env.port, timeout: 15, [.send("GET /v1/open/slow HTTP/1.1\r\nHost: x\r\n")])
        let reply = try XCTUnwrap(result.replies.first, "no answer within 15 s: \(result.raw)")
        assertRefusal(reply, status: 408, code: "header_timeout", action: "retry")
        XCTAssertTrue(result.closed)
        // The same request sent at once is served.
        let fast = try RawClient.run(port: env.port, timeout: 5, [.send("GET /v1/open/fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")])
        XCTAssertEqual(fast.replies.first?.status, 200, fast.raw)
    }

    func testUpstreamDownIs502() throws {
        let reply = try env.send("GET", "/v1/down/anything")
        XCTAssertEqual(reply.status, 502, "\(reply)")
        XCTAssertNotNil(reply.errorCode)
        XCTAssertEqual(reply.header("App-Attest-Error"), reply.errorCode)
        XCTAssertEqual(reply.action, "retry")
    }

    func testUnknownPathWithoutRouteIs404() throws {
        let before = try env.upstream.requestCount()
        assertRefusal(try env.send("GET", "/nowhere"), status: 404, code: "no_route")
        assertRefusal(try env.send("GET", "/v1/opener"), status: 404, code: "no_route", action: "deny")
        assertRefusal(try env.send("POST", "/app-attest/v1/unknown", body: []), status: 404, code: "unknown_endpoint")
        XCTAssertEqual(try env.upstream.requestCount(), before)
    }

    /// A request-target that is not in normal form is refused, never matched as one route and
    /// forwarded as another (e.g. `/v1/open/../protected` slipping past the enforced route).
    func testNonNormalTargetsAreRefusedNotRerouted() throws {
        let before = try env.upstream.requestCount()
        for target in ["/v1/open/../protected/x", "/v1/protected/../open/x", "/v1/open/./x", "//v1/protected/x",
                       "/v1/open/%2e%2e/protected/x", "/v1/open%2F..%2Fprotected/x", "/v1/%6Fpen/x", "/v1/open/%7Euser"] {
            let reply = try env.send("GET", target)
            XCTAssertEqual(reply.status, 400, "\(target): \(reply)")
            XCTAssertTrue(reply.errorCode?.hasPrefix("target_") ?? false, "\(target): \(reply)")
        }
        XCTAssertEqual(try env.upstream.requestCount(), before, "none of them reached the upstream")
        // Dots in the query are not path segments.
        let query = try env.send("GET", "/v1/open/x?a=/../protected")
        XCTAssertEqual(query.status, 200)
        XCTAssertEqual(query.echo?.target, "/v1/open/x?a=/../protected")
    }
}
