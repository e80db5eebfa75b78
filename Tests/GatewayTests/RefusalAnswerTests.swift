import Foundation
import GatewayTestSupport
import XCTest

/// The README's "Refusals" table for the answers the proxy core produces, at the composed gateway over
/// real sockets: status, `error` code (JSON and `App-Attest-Error`) and `action` of 408
/// (`header_timeout`, `body_timeout` → `retry`), 413 (`body_too_large` → `deny`), 431
/// (`header_too_large` → `deny`), 502 (`upstream_unavailable` → `retry`) and 504
/// (`upstream_timeout` → `retry`); each next to the same request shaped to pass.
///
/// The timeouts are waited for by reading until the gateway answers and closes (no sleep races
/// them): a 408 that never comes fails after the client's 15 s bound.
final class RefusalAnswerTests: XCTestCase {
    /// One gateway for the class, made by the first test. `nonisolated(unsafe)`: XCTest runs the
    /// class's tests and its class tear-down one at a time on one thread.
    nonisolated(unsafe) static var shared: (gateway: GatewayUnderTest, upstream: UpstreamProcess, dead: ReservedPort, work: URL)?
    var gateway: GatewayUnderTest { RefusalAnswerTests.shared!.gateway }

    override func setUpWithError() throws {
        try super.setUpWithError()
        guard RefusalAnswerTests.shared == nil else { return }
        let upstream = try UpstreamProcess()
        let dead = try ReservedPort()
        let work = try E2EPaths.temporaryDirectory("refusals")
        let yaml = """
        listen: 127.0.0.1:0
        admin: 127.0.0.1:0
        apps:
          - app_id: ABCDE12345.com.example.refusals
        upstreams:
          app: http://127.0.0.1:\(upstream.port)
          slow:
            url: http://127.0.0.1:\(upstream.port)
            response_timeout: 300ms
          down: http://127.0.0.1:\(dead.port)
        routes:
          - name: slow
            path_prefix: /slow
            upstream: slow
            mode: off
          - name: down
            path_prefix: /down
            upstream: down
            mode: off
          - name: enforced
            path_prefix: /enforced
            upstream: app
            mode: enforce
          - name: monitored
            path_prefix: /monitored
            upstream: app
            mode: monitor
          - name: open
            path_prefix: /
            upstream: app
            mode: off
            max_body: 1KiB
        timeouts:
          header: 1s
          body: 1s

        """
        let gateway = try GatewayUnderTest(yaml: yaml, baseDirectory: work.path, clock: MovableClock().gatewayClock)
        RefusalAnswerTests.shared = (gateway, upstream, dead, work)
    }

    override class func tearDown() {
        if let shared {
            shared.gateway.stop()
            shared.upstream.stop()
            try? FileManager.default.removeItem(at: shared.work)
        }
        shared = nil
        super.tearDown()
    }

    func testIncompleteHeadIs408HeaderTimeoutRetry() throws {
        let slow = try RawClient.run(port: gateway.port, timeout: 15, [.send("GET /open/slow-head HTTP/1.1\r\nHost: x\r\n")])
        let reply = try XCTUnwrap(slow.replies.first, "no answer within 15 s: \(slow.raw)")
        assertRefusal(reply, status: 408, code: "header_timeout", action: "retry")
        XCTAssertTrue(slow.closed)
        let whole = try RawClient.run(port: gateway.port, timeout: 15, [.send("GET /open/head HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")])
        XCTAssertEqual(whole.replies.first?.status, 200, whole.raw)
    }

    func testIncompleteBodyIs408BodyTimeoutRetry() throws {
        let slow = try RawClient.run(port: gateway.port, timeout: 15, [
            .send("POST /open/slow-body HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc"),
        ])
        let reply = try XCTUnwrap(slow.replies.first, "no answer within 15 s: \(slow.raw)")
        assertRefusal(reply, status: 408, code: "body_timeout", action: "retry")
        XCTAssertTrue(slow.closed)
        let whole = try RawClient.run(port: gateway.port, timeout: 15, [
            .send("POST /open/body HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nConnection: close\r\n\r\nabcdefghij"),
        ])
        XCTAssertEqual(whole.replies.first?.status, 200, whole.raw)
    }

    /// `Expect: 100-continue` without any evidence on an enforced route: the 401 `assertion_missing`
    /// comes instead of `100 Continue`, so the client never uploads the body (before, it got 100,
    /// sent the body, then the 401). With an evidence header the enforcer needs the body: 100 first;
    /// a monitored route forwards.
    func testExpectContinueWithoutEvidenceOnAnEnforcedRouteIsRefusedBeforeTheBody() throws {
        let bare = try RawClient.run(port: gateway.port, timeout: 15, [
            .send("POST /enforced/upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n"),
        ])
        XCTAssertFalse(bare.raw.contains("100 Continue"), bare.raw)
        let reply = try XCTUnwrap(bare.replies.first, bare.raw)
        assertRefusal(reply, status: 401, code: "assertion_missing", action: "refresh_challenge")
        XCTAssertTrue(bare.closed, "the body was never read: the connection closes")

        let withEvidence = try RawClient.run(port: gateway.port, timeout: 15, [
            .send("POST /enforced/upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\n"
                  + "App-Attest-Key-Id: AAAA\r\nConnection: close\r\n\r\nbody"),
        ])
        XCTAssertTrue(withEvidence.raw.hasPrefix("HTTP/1.1 100 Continue\r\n"), withEvidence.raw)
        XCTAssertEqual(withEvidence.replies.last?.status, 401, withEvidence.raw)

        let monitored = try RawClient.run(port: gateway.port, timeout: 15, [
            .send("POST /monitored/upload HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody"),
        ])
        XCTAssertTrue(monitored.raw.hasPrefix("HTTP/1.1 100 Continue\r\n"), monitored.raw)
        XCTAssertEqual(monitored.replies.last?.status, 200, monitored.raw)
    }

    func testBodyOverMaxBodyIs413BodyTooLargeDeny() throws {
        let large = try Curl.request(port: gateway.port, method: "POST", target: "/open/upload", body: randomBytes(1025))
        assertRefusal(large, status: 413, code: "body_too_large", action: "deny")
        // Counted against the route the head matched (the server answered before the gateway's
        // handler ran: it was counted as route "none" before).
        let metrics = try Curl.request(port: gateway.adminPort, method: "GET", target: "/metrics")
        XCTAssertTrue(metrics.text.contains("attest_gateway_requests_total{route=\"open\",status=\"413\","), metrics.text)
        XCTAssertFalse(metrics.text.contains("attest_gateway_requests_total{route=\"none\",status=\"413\","), metrics.text)
        let fits = try Curl.request(port: gateway.port, method: "POST", target: "/open/upload", body: randomBytes(1024))
        XCTAssertEqual(fits.status, 200, "\(fits)")
    }

    func testHeaderSectionOverLimitIs431HeaderTooLargeDeny() throws {
        // limits.max_header_bytes is 16KiB by default.
        let large = try Curl.request(port: gateway.port, method: "GET", target: "/open/h",
                                     headers: [("X-Big", String(repeating: "a", count: 17 * 1024))])
        assertRefusal(large, status: 431, code: "header_too_large", action: "deny")
        let fits = try Curl.request(port: gateway.port, method: "GET", target: "/open/h",
                                    headers: [("X-Big", String(repeating: "a", count: 8 * 1024))])
        XCTAssertEqual(fits.status, 200, "\(fits)")
    }

    func testUnreachableUpstreamIs502UpstreamUnavailableRetry() throws {
        let reply = try Curl.request(port: gateway.port, method: "GET", target: "/down/x")
        assertRefusal(reply, status: 502, code: "upstream_unavailable", action: "retry")
        XCTAssertEqual(try Curl.request(port: gateway.port, method: "GET", target: "/open/x").status, 200)
    }

    /// `response_timeout: 300ms` against an upstream that answers after 5 s; the same upstream
    /// answering at once passes.
    func testSlowUpstreamIs504UpstreamTimeoutRetry() throws {
        let reply = try Curl.request(port: gateway.port, method: "GET", target: "/slow/x?delay=5000")
        assertRefusal(reply, status: 504, code: "upstream_timeout", action: "retry")
        XCTAssertEqual(try Curl.request(port: gateway.port, method: "GET", target: "/slow/x").status, 200)
    }
}
