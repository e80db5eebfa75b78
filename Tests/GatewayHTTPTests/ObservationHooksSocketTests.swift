import Foundation
import GatewayHTTP
import GatewayTestSupport
import XCTest

/// The proxy core's observation hooks over real sockets (curl -> HTTPServer -> UpstreamPool -> the
/// Python upstream): connections reported once each when they start speaking a protocol and when
/// they end; one report per upstream exchange with its outcome; the forward's `responseField` set
/// on the relayed response head, over HTTP/1.1 and HTTP/2.
final class ObservationHooksSocketTests: XCTestCase {
    private var harness: ProxyHarness!

    override func setUpWithError() throws {
        harness = try ProxyHarness()
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    private func curl(_ extra: [String], _ path: String) throws -> (status: Int32, output: String) {
        try ChildProcess.run("curl", ["-s", "-S", "-D", "-", "-o", "/dev/null", "--max-time", "10"] + extra + [harness.url(path)])
    }

    func testConnectionsAreReportedOnceWhenTheyStartAndWhenTheyEnd() throws {
        XCTAssertEqual(try curl(["--http1.1"], "/local/a").status, 0)
        XCTAssertEqual(try curl(["--http2-prior-knowledge"], "/local/b").status, 0)
        waitFor("both connections ended") { harness.handler.connectionEvents.filter { !$0.started }.count == 2 }
        let events = harness.handler.connectionEvents
        XCTAssertEqual(events.map(\.started), [true, false, true, false], "one connection after the other")
        XCTAssertEqual(events.map(\.connection.protocolName), ["h1", "h1", "h2", "h2"],
                       "the h2c connection is reported as h2 only, never as the h1 it was sniffed from")
        XCTAssertEqual(events[0].connection.id, events[1].connection.id)
        XCTAssertEqual(events[0].connection.localAddress, "127.0.0.1:\(harness.port)")

        // A connection that closes before its first byte never started speaking: nothing reported.
        let before = harness.handler.connectionEvents.count
        let silent = try LoopbackSocket.connect(port: harness.port)
        close(silent)
        XCTAssertEqual(try curl(["--http1.1"], "/local/c").status, 0)
        waitFor("the third request's connection ended") { harness.handler.connectionEvents.count == before + 2 }
        XCTAssertEqual(harness.handler.connectionEvents.count, before + 2, "the silent connection is not reported")
    }

    func testEveryUpstreamExchangeIsReportedWithItsOutcomeAndTheResponseFieldIsSet() throws {
        for extra in [["--http1.1"], ["--http2-prior-knowledge"]] {
            let ok = try curl(extra, "/api/ok")
            XCTAssertTrue(ok.output.lowercased().contains("x-forwarded-by: proxy-test"), "\(extra): \(ok.output)")
        }
        let dead = try curl(["--http1.1"], "/dead/x")
        XCTAssertTrue(dead.output.hasPrefix("HTTP/1.1 502"), dead.output)
        XCTAssertFalse(dead.output.lowercased().contains("x-forwarded-by"), "a rendered error is no relayed response: \(dead.output)")
        waitFor("three exchanges reported") { harness.reports.all.count == 3 }
        let reports = harness.reports.all
        let completed = reports.filter { $0.outcome == .completed }
        XCTAssertEqual(completed.map(\.upstream), ["main", "main"])
        XCTAssertTrue(completed.allSatisfy { $0.status == 200 && $0.nanoseconds > 0 && !$0.retried }, "\(completed)")
        let failed = reports.filter { $0.upstream == "dead" }
        XCTAssertEqual(failed.map(\.outcome), [.failed(.upstreamUnavailable)])
        XCTAssertEqual(failed.first?.status, 0, "no response head")
    }
}
