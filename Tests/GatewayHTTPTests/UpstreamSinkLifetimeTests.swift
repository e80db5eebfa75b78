import Foundation
@testable import GatewayHTTP
import GatewayTestSupport
import XCTest

/// An upstream exchange holds its downstream sink (an HTTP/1.1 connection, an HTTP/2 stream)
/// strongly until it finishes (no weak reference: it gave every connection a side table and made
/// each retain and release take the runtime's slow path). That must never keep one alive: after
/// completed, cancelled (client gone, 499), reset (RST_STREAM) and failed exchanges, and once the
/// connections closed, the server holds no live sink (debug builds count them,
/// `HTTPServerContext.liveSinks`). The same for the HTTP/2 connections, which the loop's end-of-turn
/// flush holds strongly while it is queued (`HTTPServerContext.liveHTTP2Connections`).
final class UpstreamSinkLifetimeTests: XCTestCase {
    private var harness: ProxyHarness!

    override func setUpWithError() throws {
        harness = try ProxyHarness()
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    func testNoSinkOutlivesItsConnection() throws {
        let live = harness.server.context.liveSinks
        let liveH2 = harness.server.context.liveHTTP2Connections
        // The count sees a connection while its exchange runs (so that 0 at the end means something).
        let inFlight = try ChildProcess("curl", ["-s", "-o", "/dev/null", harness.url("/x?delay=1500")])
        XCTAssertTrue(waitUntil(5) { live.value >= 1 }, "a live sink while the exchange runs")
        _ = waitUntil(10) { !inFlight.isRunning }
        // Completed exchanges, HTTP/1.1 and h2c, kept alive then closed by the client.
        let h1 = try Curl.run(["-s", "-o", "/dev/null", "-o", "/dev/null", "-w", "%{http_code} ", harness.url("/a"), harness.url("/b?size=100000")])
        XCTAssertEqual(h1.output, "200 200 ", h1.output)
        // (nghttp: curl 7.88 does not send a second request on a reused h2c connection, nginx's neither.)
        let slowH2 = try ChildProcess("nghttp", ["-n", harness.url("/e?delay=1500")])
        XCTAssertTrue(waitUntil(5) { liveH2.value >= 1 }, "a live HTTP/2 connection while its stream runs")
        _ = waitUntil(10) { !slowH2.isRunning }
        let h2 = try ChildProcess.run("nghttp", ["-n", "-s", harness.url("/c"), harness.url("/d?size=100000")])
        XCTAssertEqual(h2.status, 0, h2.output)
        XCTAssertEqual(h2.output.split(separator: "\n").filter { $0.contains(" 200 ") }.count, 2, h2.output)
        XCTAssertTrue(waitUntil(10) { liveH2.value == 0 }, "live HTTP/2 connections after nghttp left: \(liveH2.value)")
        // A failed exchange (the upstream resets).
        XCTAssertEqual(try Curl.run(["-s", "-o", "/dev/null", "-w", "%{http_code}", harness.url("/x?reset=1")]).output, "502")
        // Cancelled: the HTTP/1.1 client leaves while the upstream is still thinking (499).
        for _ in 0..<3 {
            _ = try RawClient.run(port: harness.port, timeout: 0.5,
                                  [.send("GET /gone/x?delay=2000 HTTP/1.1\r\nHost: h\r\n\r\n"), .sleep(200), .shutdown])
        }
        // Reset: an h2 stream cancelled while its upstream answers slowly, then another on the same connection.
        let reset = try HTTP2Client.run(port: harness.port, "cancel", "/slow/x?delay=2000")
        XCTAssertEqual((reset["after"] as? [Any])?.first as? String, "status", "\(reset)")
        XCTAssertTrue(waitUntil(10) { live.value == 0 }, "live sinks after every connection closed: \(live.value)")
        XCTAssertEqual(live.value, 0)
        XCTAssertTrue(waitUntil(10) { liveH2.value == 0 }, "live HTTP/2 connections at the end: \(liveH2.value)")
    }
}
