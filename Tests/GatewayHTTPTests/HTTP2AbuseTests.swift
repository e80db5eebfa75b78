import Foundation
import GatewayHTTP
import GatewayTestSupport
import XCTest

/// HTTP/2 abuse and malformed input over real sockets (Fixtures/h2client.py, raw frames): each costs
/// at most the connection (GOAWAY), never the process, and the server keeps serving.
final class HTTP2AbuseTests: XCTestCase {
    private var harness: ProxyHarness!

    override func setUpWithError() throws {
        harness = try ProxyHarness()
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    private func run(_ scenario: String, _ argument: String? = nil) throws -> [String: Any] {
        if let argument { return try HTTP2Client.run(port: harness.port, scenario, argument) }
        return try HTTP2Client.run(port: harness.port, scenario)
    }

    /// The server still answers a well-behaved HTTP/2 client.
    private func assertStillServing(file: StaticString = #filePath, line: UInt = #line) throws {
        let r = try run("request", "/local/still-serving")
        XCTAssertEqual(r["status"] as? Int, 200, "\(r)", file: file, line: line)
    }

    private func assertGoaway(_ r: [String: Any], _ code: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r["goaway"] as? String, code, "\(r)", file: file, line: line)
        XCTAssertEqual(r["closed"] as? Bool, true, "the server closed the connection: \(r)", file: file, line: line)
    }

    func testSilentConnectionIsClosedAfterTheHeaderTimeout() throws {
        // The harness's header timeout is 0.3 s, its idle timeout 2 s.
        let r = try run("preface-only")
        assertGoaway(r, "NO_ERROR")
        XCTAssertLessThan(r["seconds"] as? Double ?? 99, 1.5, "the header timeout, not the idle timeout: \(r)")
    }

    func testRapidResetIsCutOffAndCancelsUpstreamWork() throws {
        let r = try run("rapid-reset", "500")
        assertGoaway(r, "ENHANCE_YOUR_CALM")
        XCTAssertEqual(r["after"] as? Int, 200, "a new connection is served afterwards: \(r)")
        // Budget: more than 100 resets within the last 200 streams opened.
        let records = harness.handler.completed.filter { $0.targetString?.hasPrefix("/rr/") == true }
        XCTAssertGreaterThanOrEqual(records.count, 100, "\(records.count)")
        XCTAssertLessThan(records.count, 300, "cut off well before the 500 streams sent")
        for record in records {
            XCTAssertEqual(record.status, 499)
            XCTAssertTrue(record.aborted)
            XCTAssertLessThan(record.latencyNanoseconds, 1_500_000_000, "the upstream's 2 s were not waited for")
        }
    }

    func testContinuationFloodIsCutOff() throws {
        let r = try run("continuation-flood")
        assertGoaway(r, "ENHANCE_YOUR_CALM")
        XCTAssertFalse(harness.handler.completed.contains { $0.targetString == "/local/cf" }, "never handled")
        let bytes = try run("continuation-bytes")
        assertGoaway(bytes, "ENHANCE_YOUR_CALM")
        try assertStillServing()
    }

    func testHeaderListTooLargeIs431OnTheStream() throws {
        let r = try run("header-too-large")
        XCTAssertEqual(r["first"] as? [AnyHashable], ["status", 431], "\(r)")
        XCTAssertEqual(r["second"] as? [AnyHashable], ["status", 200], "the connection stays usable: \(r)")
        XCTAssertNil(r["goaway"] as? String)
        let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString == "/local/big" })
        XCTAssertEqual(record.error, .headerTooLarge)
        XCTAssertEqual(record.status, 431)
    }

    func testHPACKBombAndTableSizeUpdateAreCutOff() throws {
        let bomb = try run("hpack-bomb")
        assertGoaway(bomb, "ENHANCE_YOUR_CALM")
        XCTAssertLessThan(bomb["encoded"] as? Int ?? 0, 8000, "a few KB that decode to 400 KB: \(bomb)")
        let update = try run("table-size-update")
        assertGoaway(update, "COMPRESSION_ERROR")
        try assertStillServing()
    }

    func testSettingsAndPingFloodsAreCutOff() throws {
        assertGoaway(try run("settings-flood"), "ENHANCE_YOUR_CALM")
        assertGoaway(try run("ping-flood"), "ENHANCE_YOUR_CALM")
        // nghttp2 drops PRIORITY frames without an on_frame_recv callback (RFC 9218 negotiated):
        // counted at their frame header (a probe sent 38 million in 5 s before this).
        assertGoaway(try run("priority-flood"), "ENHANCE_YOUR_CALM")
        assertGoaway(try run("settings-entries"), "ENHANCE_YOUR_CALM")
        try assertStillServing()
    }

    func testWindowUpdatePriorityUpdateAndUnknownFrameFloodsAreCutOff() throws {
        // WINDOW_UPDATE frames beyond what the DATA frames sent explain (Envoy's budget).
        assertGoaway(try run("window-update-flood"), "ENHANCE_YOUR_CALM")
        // PRIORITY_UPDATE (RFC 9218) and frames of unassigned types count like PRIORITY frames.
        assertGoaway(try run("priority-update-flood"), "ENHANCE_YOUR_CALM")
        assertGoaway(try run("unknown-frame-flood"), "ENHANCE_YOUR_CALM")
        try assertStillServing()
    }

    func testAClientThatAcknowledgesEveryDataFrameIsNotCutOff() throws {
        // 1 MB through a 4 KiB stream window: about 256 DATA frames, each answered with a
        // connection and a stream WINDOW_UPDATE, two per DATA frame, within the budget of ten.
        let r = try run("window-update-download", "1000000")
        XCTAssertEqual(r["received"] as? Int, 1_000_000, "\(r)")
        XCTAssertNil(r["goaway"] as? String, "\(r)")
        XCTAssertEqual(r["resets"] as? [String], [], "\(r)")
    }

    /// `timeouts.body` bounds the whole body from the HEADERS frame, not the gap between DATA frames:
    /// one byte every 0.1 s (the harness's body timeout is 0.3 s) is answered 408 long before the
    /// tenth byte, as over HTTP/1.1.
    func testBodyDribbledByteByByteTimesOut() throws {
        let r = try HTTP2Client.run(port: harness.port, "dribble-body", "10", "0.1")
        XCTAssertEqual(r["outcome"] as? [AnyHashable], ["status", 408], "\(r)")
        XCTAssertLessThan(r["sent"] as? Int ?? 99, 10, "answered before the body was complete: \(r)")
        let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString == "/local/dribble" })
        XCTAssertEqual(record.error, .bodyTimeout)
        try assertStillServing()
    }

    /// A header block left unfinished after a first request is bounded by `timeouts.header` (0.3 s
    /// in the harness), not by the idle timeout (2 s): the connection ends.
    func testUnfinishedHeaderBlockAfterARequestIsBoundedByTheHeaderTimeout() throws {
        let r = try run("unfinished-block")
        XCTAssertEqual(r["first"] as? [AnyHashable], ["status", 200], "\(r)")
        XCTAssertEqual(r["closed"] as? Bool, true, "\(r)")
        XCTAssertLessThan(r["seconds"] as? Double ?? 99, 1.5, "the header timeout, not the idle timeout: \(r)")
        XCTAssertFalse(harness.handler.completed.contains { $0.targetString == "/local/second" }, "never handled")
    }

    func testEmptyDataFloodIsCutOff() throws {
        assertGoaway(try run("empty-data-flood"), "ENHANCE_YOUR_CALM")
        try assertStillServing()
    }

    func testMaxConcurrentStreams() throws {
        // Before the client acknowledged our SETTINGS: streams beyond 100 are refused one by one.
        let early = try run("max-concurrent")
        XCTAssertEqual(early["refused"] as? [Int], Array(stride(from: 201, through: 219, by: 2)), "\(early)")
        XCTAssertEqual(early["otherResets"] as? [Int], [])
        XCTAssertNil(early["goaway"] as? String, "\(early)")
        // Once acknowledged, exceeding the advertised limit is a connection error for nghttp2.
        let acked = try run("max-concurrent-acked")
        XCTAssertEqual(acked["advertised"] as? Int, 100, "\(acked)")
        XCTAssertEqual(acked["goaway"] as? String, "PROTOCOL_ERROR", "\(acked)")
        try assertStillServing()
    }

    func testMalformedRequestsResetTheStreamOnly() throws {
        let r = try run("bad-headers")
        let outcomes = try XCTUnwrap(r["outcomes"] as? [String: [AnyHashable]], "\(r)")
        let malformed = ["missing :path", "missing :method", "missing :scheme", "empty :path", "duplicated :method",
                         "duplicated :path", "unknown pseudo-header", "response pseudo-header",
                         "pseudo-header after regular", "uppercase name", "connection", "keep-alive", "proxy-connection",
                         "transfer-encoding", "upgrade", "te gzip", "space in name", "CR in value",
                         "control byte in value", "leading space in value", "host differs from :authority",
                         "two host fields", "userinfo in :authority", "no :authority nor host", "two content-length",
                         "bad content-length"]
        for name in malformed {
            XCTAssertEqual(outcomes[name], ["rst", "PROTOCOL_ERROR"], name)
        }
        XCTAssertEqual(outcomes["target not in normal form"], ["status", 400])
        XCTAssertEqual(outcomes["asterisk form"], ["status", 400])
        XCTAssertEqual(outcomes["CONNECT"], ["status", 400])
        XCTAssertEqual(outcomes["expect other than 100-continue"], ["status", 417])
        for name in ["authority with two ports", "authority port out of range", "authority unclosed IPv6 literal",
                     "host not host-port", "userinfo in host"] {
            XCTAssertEqual(outcomes[name], ["status", 400], name)
        }
        XCTAssertEqual(outcomes["lower-case method"], ["status", 400])
        XCTAssertEqual(outcomes["mixed-case method"], ["status", 400])
        XCTAssertEqual(outcomes["upper-case extension method"], ["status", 200])
        XCTAssertEqual(outcomes["te trailers"], ["status", 200])
        XCTAssertEqual(outcomes["host equal to :authority"], ["status", 200])
        XCTAssertEqual(outcomes["host without :authority"], ["status", 200])
        XCTAssertEqual(outcomes["after"], ["status", 200], "the connection survives: \(r)")
        XCTAssertNil(r["goaway"] as? String)
        XCTAssertEqual(outcomes.count, malformed.count + 16, "every case was checked: \(outcomes.keys.sorted())")
        // Malformed streams are logged as refusals (400, no response), the refused ones with their error.
        let dot = try XCTUnwrap(harness.handler.completed.first { $0.targetString == "/a/../b" })
        XCTAssertEqual(dot.error, .targetDotSegment)
        XCTAssertEqual(dot.status, 400)
        for target in ["/local/auth1", "/local/auth2", "/local/auth3", "/local/auth4", "/local/auth5"] {
            let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString == target }, target)
            XCTAssertEqual(record.error, .hostInvalid, target)
        }
        for target in ["/local/method1", "/local/method2"] {
            let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString == target }, target)
            XCTAssertEqual(record.error, .methodInvalid, target)
        }
        let badHeaderRecords = harness.handler.completed.filter { $0.error == .badHeader }
        XCTAssertEqual(badHeaderRecords.count, malformed.count, badHeaderRecords.map { "\($0.targetString ?? "-")" }.description)
        XCTAssertTrue(badHeaderRecords.allSatisfy { $0.status == 400 && !$0.aborted && $0.connection.protocolName == "h2" })
    }

    func testContentLengthDisagreeingWithDataResetsTheStream() throws {
        let r = try run("content-length")
        let outcomes = try XCTUnwrap(r["outcomes"] as? [String: [AnyHashable]], "\(r)")
        XCTAssertEqual(outcomes["10"], ["rst", "PROTOCOL_ERROR"], "fewer bytes than declared")
        XCTAssertEqual(outcomes["3"], ["rst", "PROTOCOL_ERROR"], "more bytes than declared")
        XCTAssertEqual(outcomes["5"], ["status", 200])
        XCTAssertNil(r["goaway"] as? String)
        XCTAssertFalse(harness.handler.completed.contains { $0.targetString == "/local/cl1" && $0.status == 200 }, "never handled")
        let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString == "/local/cl1" })
        XCTAssertEqual(record.error, .badContentLength)
    }

    func testZeroWindowClientIsClosedAfterTheSendTimeout() throws {
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 5, bodyRead: 5, idle: 30, write: 0.5, linger: 0.5))
        defer { h.stop() }
        let r = try HTTP2Client.run(port: h.port, "zero-window")
        XCTAssertEqual(r["statuses"] as? [Int], [200], "\(r)")
        XCTAssertEqual(r["dataBytes"] as? Int, 0, "nothing can flow through a zero window")
        assertGoaway(r, "ENHANCE_YOUR_CALM")
        let seconds = r["seconds"] as? Double ?? 99
        XCTAssertGreaterThan(seconds, 0.45, "\(r)")
        XCTAssertLessThan(seconds, 3, "closed after the 0.5 s send timeout, not the 30 s idle timeout: \(r)")
        XCTAssertTrue(waitUntil(5) { h.handler.completed.contains { $0.targetString?.hasPrefix("/zero") == true } })
        let record = try XCTUnwrap(h.handler.completed.first { $0.targetString?.hasPrefix("/zero") == true })
        XCTAssertTrue(record.aborted)
        XCTAssertEqual(record.status, 200)
        XCTAssertEqual(record.error, .clientStalled, "the client's window, not the upstream (was upstream_timeout or nothing)")
        let r2 = try HTTP2Client.run(port: h.port, "request", "/local/after-zero")
        XCTAssertEqual(r2["status"] as? Int, 200)
    }

    func testSlowReaderGetsEverythingThroughFlowControl() throws {
        let r = try run("slow-reader", "4194304")
        XCTAssertEqual(r["ok"] as? Bool, true, "\(r)")
        XCTAssertEqual(r["length"] as? Int, 4194304)
        XCTAssertEqual(r["after"] as? Int, 200)
        XCTAssertEqual(harness.pool.statistics.connectionsOpened, 1,
                       "the paused exchange resumed and its upstream connection went back to the pool")
        let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString?.hasPrefix("/slow-reader") == true })
        XCTAssertFalse(record.aborted)
        XCTAssertEqual(record.responseBodyBytes, 4194304)
    }

    func testClientResetCancelsTheUpstreamExchangeAtOnce() throws {
        let r = try run("cancel", "/cancel/x?delay=3000")
        XCTAssertEqual(r["after"] as? [AnyHashable], ["status", 200], "\(r)")
        XCTAssertTrue(waitUntil(5) { self.harness.handler.completed.contains { $0.targetString?.hasPrefix("/cancel/") == true } })
        let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString?.hasPrefix("/cancel/") == true })
        XCTAssertTrue(record.aborted)
        XCTAssertEqual(record.status, 499)
        XCTAssertEqual(record.upstream, "main")
        XCTAssertLessThan(record.latencyNanoseconds, 2_000_000_000, "cancelled at the reset, not after the upstream's 3 s")
    }

    func testDrainSendsGoawayAndLetsOpenStreamsFinish() throws {
        let client = try HTTP2Client.start(port: harness.port, "drain", "/drain/x?delay=800")
        XCTAssertTrue(waitUntil(10) { client.output.contains("READY") && self.harness.handler.headDecisions >= 1 }, client.output)
        let done = DispatchSemaphore(value: 0)
        harness.server.shutdown(gracePeriod: 5) { done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 8), .success, "shutdown completed")
        XCTAssertEqual(client.wait(), 0, client.output)
        let r = try HTTP2Client.parse(client.output)
        let events = try XCTUnwrap(r["events"] as? [[String: Any]], "\(r)")
        let goaways = events.filter { $0["type"] as? String == "GOAWAY" }
        XCTAssertEqual(goaways.count, 2, "shutdown notice, then the final GOAWAY: \(events)")
        XCTAssertEqual(goaways.first?["lastStreamID"] as? Int, Int(Int32.max))
        XCTAssertEqual(goaways.last?["lastStreamID"] as? Int, 3)
        XCTAssertTrue(goaways.allSatisfy { $0["error"] as? String == "NO_ERROR" })
        let statuses = events.filter { $0["type"] as? String == "HEADERS" }.map { ($0["stream"] as? Int ?? 0, $0["status"] as? Int ?? 0) }
        XCTAssertEqual(statuses.map(\.0).sorted(), [1, 3], "\(events)")
        XCTAssertTrue(statuses.allSatisfy { $0.1 == 200 }, "\(events)")
        XCTAssertEqual(events.first?["type"] as? String, "GOAWAY", "the notice comes first: \(events)")
        XCTAssertEqual(events.last?["type"] as? String, "GOAWAY", "the final GOAWAY comes last: \(events)")
        XCTAssertGreaterThan(r["body1"] as? Int ?? 0, 0)
        XCTAssertEqual(r["closed"] as? Bool, true)
        let record = try XCTUnwrap(harness.handler.completed.first { $0.targetString?.hasPrefix("/drain/") == true })
        XCTAssertFalse(record.aborted)
        XCTAssertEqual(record.status, 200)
    }
}
