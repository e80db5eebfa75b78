import Foundation
import GatewayHTTP
import GatewayTestSupport
import XCTest

/// HTTP/2 with prior knowledge (h2c, RFC 9113 section 3.3) over real sockets: curl, nghttp and h2load
/// against an HTTPServer with the proxy test handler and the real Python upstream.
final class HTTP2SocketTests: XCTestCase {
    private var harness: ProxyHarness!

    override func setUpWithError() throws {
        harness = try ProxyHarness()
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    private func curl(_ args: [String]) throws -> (status: Int32, output: String) {
        try Curl.run(["--http2-prior-knowledge"] + args)
    }

    private func json(_ text: String) throws -> [String: Any] {
        let body = text.split(separator: "\n").last.map(String.init) ?? text
        return try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any], text)
    }

    func testCurlGetIsForwardedOverHTTP2() throws {
        let (status, output) = try curl(["-w", "\\n%{http_version} %{http_code}\\n", "-H", "X-Strip-Me: 1",
                                         "-H", "X-Keep: Yes", harness.url("/api/items?b=2&a=%2F")])
        XCTAssertEqual(status, 0, output)
        let lines = output.split(separator: "\n")
        XCTAssertEqual(lines.last, "2 200", output)
        let echo = try json(String(lines[lines.count - 2]))
        XCTAssertEqual(echo["target"] as? String, "/api/items?b=2&a=%2F")
        XCTAssertEqual(echo["method"] as? String, "GET")
        XCTAssertEqual(echo["version"] as? String, "HTTP/1.1", "the upstream side stays HTTP/1.1")
        let headers = (echo["headers"] as? [[String]] ?? []).map { ($0[0].lowercased(), $0.count > 1 ? $0[1] : "") }
        XCTAssertEqual(headers.filter { $0.0 == "host" }.map(\.1), ["127.0.0.1:\(harness.port)"], "Host from :authority")
        XCTAssertTrue(headers.contains { $0 == ("x-keep", "Yes") }, "\(headers)")
        XCTAssertFalse(headers.contains { $0.0 == "x-strip-me" }, "the handler's edits apply: \(headers)")
        XCTAssertFalse(headers.contains { $0.0.hasPrefix(":") }, "no pseudo-header reaches the upstream: \(headers)")
        let record = try XCTUnwrap(harness.handler.completed.last)
        XCTAssertEqual(record.connection.protocolName, "h2")
        XCTAssertEqual(record.connection.protocolName, "h2")
        XCTAssertNil(record.connection.tlsVersion)
        XCTAssertEqual(record.status, 200)
        XCTAssertEqual(record.upstream, "main")
        XCTAssertFalse(record.aborted)
    }

    func testCurlPostBodyLargeResponseAndRefusal() throws {
        let body = String(repeating: "0123456789", count: 5000)
        let post = try curl(["--data-binary", body, harness.url("/upload")])
        XCTAssertEqual(post.status, 0, post.output)
        let echo = try json(post.output)
        XCTAssertEqual(echo["bodyLength"] as? Int, 50000)
        XCTAssertEqual(echo["method"] as? String, "POST")
        let lengths = (echo["headers"] as? [[String]] ?? []).filter { $0[0].lowercased() == "content-length" }.map { $0[1] }
        XCTAssertEqual(lengths, ["50000"], "re-framed with one Content-Length")

        let file = harness.tempDir.appendingPathComponent("large.bin")
        let (status, headers) = try curl(["-D", "-", "-o", file.path, harness.url("/large?size=1048576")])
        XCTAssertEqual(status, 0, headers)
        XCTAssertTrue(headers.hasPrefix("HTTP/2 200"), headers)
        XCTAssertTrue(headers.contains("content-length: 1048576"), headers)
        let expected = headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-content-sha256:") }?
            .split(separator: " ").last.map(String.init)
        let got = try ChildProcess.run("sha256sum", [file.path]).output.prefix(64)
        XCTAssertEqual(expected, String(got))

        let chunked = try curl(["-D", "-", "-o", file.path, harness.url("/large?chunked=300000&chunksize=7000")])
        XCTAssertEqual(chunked.status, 0, chunked.output)
        XCTAssertFalse(chunked.output.lowercased().contains("transfer-encoding"), chunked.output)
        XCTAssertEqual((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int), 300000)

        let refused = try curl(["-D", "-", harness.url("/reject/x")])
        XCTAssertEqual(refused.status, 0, refused.output)
        XCTAssertTrue(refused.output.hasPrefix("HTTP/2 404"), refused.output)
        XCTAssertTrue(refused.output.hasSuffix("no such route\n"), refused.output)

        let local = try curl(["-D", "-", "--data-binary", "abc", harness.url("/local/here?x=1")])
        XCTAssertTrue(local.output.hasPrefix("HTTP/2 200"), local.output)
        XCTAssertTrue(local.output.contains("x-target: /local/here?x=1"), local.output)
        XCTAssertTrue(local.output.contains("x-body-length: 3"), local.output)
        XCTAssertTrue(local.output.contains("date: "), local.output)
        XCTAssertTrue(local.output.hasSuffix("abc"), local.output)
    }

    func testLargeUploadWithExpectContinueFlowsThroughTheWindows() throws {
        let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let file = harness.tempDir.appendingPathComponent("upload.bin")
        try Data(body).write(to: file)
        let (status, output) = try curl(["-H", "Expect: 100-continue", "--data-binary", "@\(file.path)", harness.url("/big-upload")])
        XCTAssertEqual(status, 0, output)
        let echo = try json(output)
        XCTAssertEqual(echo["bodyLength"] as? Int, body.count)
        let sha = try ChildProcess.run("sha256sum", [file.path]).output.prefix(64)
        XCTAssertEqual(echo["bodySHA256"] as? String, String(sha))
        let names = (echo["headers"] as? [[String]] ?? []).map { $0[0].lowercased() }
        XCTAssertFalse(names.contains("expect"), "Expect is answered here, not forwarded: \(names)")
    }

    /// A `content-length` over the limit is answered `413` at the HEADERS frame. nghttp, not curl:
    /// the answer comes before the client sent its body, and curl 7.88.1 sometimes drops such an
    /// answer (exit 92, see the test below), which made this test fail now and then under load.
    func testBodyOverLimitIs413OnTheStream() throws {
        let body = FileManager.default.temporaryDirectory.appendingPathComponent("b17-\(UUID().uuidString.prefix(8))")
        try Data(repeating: 0x78, count: 17).write(to: body)
        defer { try? FileManager.default.removeItem(at: body) }
        let over = try ChildProcess.run("nghttp", ["-v", "-d", body.path, harness.url("/limited/x")])
        XCTAssertEqual(over.status, 0, over.output)
        XCTAssertTrue(over.output.contains("content-length: 17"), "sent with its length: \(over.output)")
        XCTAssertTrue(over.output.contains(":status: 413"), over.output)
        XCTAssertTrue(over.output.contains("x-error: body_too_large"), over.output)
        let ok = try curl(["-D", "-", "--data-binary", String(repeating: "x", count: 16), harness.url("/limited/x")])
        XCTAssertTrue(ok.output.hasPrefix("HTTP/2 200"), ok.output)
    }

    /// A body of unknown length (curl streaming stdin sends no `content-length` over HTTP/2) is counted
    /// as its DATA arrives: over the limit it is `413` on the stream, at the limit it passes.
    func testBodyWithoutContentLengthOverLimitIs413OnTheStream() throws {
        // Over the limit, the 413 goes out before the client ended its request, so the stream ends with
        // RST_STREAM NO_ERROR after the complete response (RFC 9113 section 8.1). Python `h2` frames
        // show that order; curl 7.88.1 (Debian 12) sometimes drops such a response and says "Empty
        // reply from server" (148 of 300 against nginx's 413 on an idle machine, 87 of 400 against ours
        // under load: curl's upload handling, reworked in curl 8.1), so curl only sends the body that fits.
        let over = try HTTP2Client.run(port: harness.port, "early-response", "/limited/x", "17")
        let events = try XCTUnwrap(over["events"] as? [[String: Any]], "\(over)")
        XCTAssertEqual(events.map { $0["type"] as? String }, ["HEADERS", "DATA", "RST_STREAM"], "\(events)")
        XCTAssertEqual(events.first?["status"] as? Int, 413, "\(events)")
        XCTAssertEqual(events.first?["flags"] as? [String], ["END_HEADERS"], "\(events)")
        XCTAssertEqual(events.dropFirst().first?["flags"] as? [String], ["END_STREAM"], "the response is complete: \(events)")
        XCTAssertEqual(events.last?["error"] as? String, "NO_ERROR", "\(events)")
        let headers = (over["headers"] as? [[String]] ?? []).map { ($0[0], $0[1]) }
        XCTAssertTrue(headers.contains { $0 == ("x-error", "body_too_large") }, "\(headers)")
        XCTAssertEqual(over["after"] as? [AnyHashable], ["status", 200], "the connection serves the next stream: \(over)")
        XCTAssertEqual(over["goaway"] as? Bool, false, "\(over)")
        XCTAssertTrue(waitUntil(5) { harness.handler.completed.contains { $0.status == 413 } })
        let record = try XCTUnwrap(harness.handler.completed.first { $0.status == 413 })
        XCTAssertEqual(record.error, .bodyTooLarge)
        XCTAssertFalse(record.aborted, "a complete response, then the reset the RFC provides for")

        // `-T -` streams stdin (curl does not know its length), unlike `--data-binary @-`, which reads
        // it all first and sends a content-length.
        let (status, fits) = try ChildProcess.run(
            "curl", ["-sS", "--max-time", "20", "--http2-prior-knowledge", "-D", "-", "-H", "Expect:",
                     "-X", "POST", "-T", "-", harness.url("/limited/x")],
            stdin: Data(repeating: 0x78, count: 16))
        XCTAssertTrue(fits.hasPrefix("HTTP/2 200"), "curl exit \(status): \(fits)")
    }

    func testTargetNotInNormalFormAnswersTheSameErrorAsHTTP1() throws {
        let h2 = try curl(["-D", "-", "--path-as-is", harness.url("/a/../b")])
        XCTAssertTrue(h2.output.hasPrefix("HTTP/2 400"), h2.output)
        XCTAssertTrue(h2.output.hasSuffix("{\"error\":\"target_dot_segment\"}"), h2.output)
        let h1 = try Curl.run(["-D", "-", "--path-as-is", harness.url("/a/../b")])
        XCTAssertTrue(h1.output.hasSuffix("{\"error\":\"target_dot_segment\"}"), h1.output)
    }

    func testUpstreamFailureAnswers502OnTheStream() throws {
        let (_, output) = try curl(["-D", "-", harness.url("/dead/x")])
        XCTAssertTrue(output.hasPrefix("HTTP/2 502"), output)
        XCTAssertTrue(output.contains("upstream_unavailable"), output)
    }

    func testResponseHopByHopFieldsAreNotSentOverHTTP2() throws {
        let (status, output) = try curl(["-D", "-", "-o", "/dev/null", harness.url("/x?hop=1")])
        XCTAssertEqual(status, 0, output)
        let lower = output.lowercased()
        XCTAssertTrue(lower.contains("x-end-to-end: passes"), output)
        for name in ["\nconnection:", "\nkeep-alive:", "\nproxy-connection:", "\nupgrade:", "\ntransfer-encoding:", "x-hop-secret"] {
            XCTAssertFalse(lower.contains(name), "\(name) in \(output)")
        }
    }

    func testHeadAndNoContent() throws {
        let head = try curl(["-I", harness.url("/h?size=12345")])
        XCTAssertTrue(head.output.contains("content-length: 12345"), head.output)
        let noContent = try curl(["-D", "-", harness.url("/n?status=204")])
        XCTAssertTrue(noContent.output.hasPrefix("HTTP/2 204"), noContent.output)
        XCTAssertFalse(noContent.output.contains("content-length"), noContent.output)
    }

    func testHTTP1StillServedAndUpgradeH2cIgnored() throws {
        let (status, output) = try Curl.run(["-w", "\\n%{http_version}", "--http2", harness.url("/plain")])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasSuffix("\n1.1"), "the h2c upgrade is not performed: \(output)")
        let echo = try json(String(output.split(separator: "\n").dropLast().last ?? ""))
        let names = (echo["headers"] as? [[String]] ?? []).map { $0[0].lowercased() }
        XCTAssertFalse(names.contains("upgrade"), "\(names)")
        XCTAssertFalse(names.contains("http2-settings"), "\(names)")
        XCTAssertEqual(harness.handler.completed.last?.connection.protocolName, "h1")
    }

    func testNghttpVerbose() throws {
        guard ChildProcess.isAvailable("nghttp") else { return XCTFail("nghttp (nghttp2-client) not installed") }
        let r = try ChildProcess.run("nghttp", ["-v", "-t", "10", harness.url("/local/nghttp"), harness.url("/e/two")])
        XCTAssertEqual(r.status, 0, r.output)
        XCTAssertTrue(r.output.contains("recv SETTINGS frame"), r.output)
        XCTAssertTrue(r.output.contains("(niv=4)"), "four settings advertised: \(r.output)")
        XCTAssertTrue(r.output.contains("[SETTINGS_INITIAL_WINDOW_SIZE(0x04):41943]"), "4 MiB / 100 streams: \(r.output)")
        XCTAssertTrue(r.output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100]"), r.output)
        XCTAssertTrue(r.output.contains(":status: 200"), r.output)
        XCTAssertTrue(r.output.contains("x-target: /local/nghttp"), r.output)
        XCTAssertTrue(r.output.contains("\"target\": \"/e/two\""), r.output)
        XCTAssertTrue(r.output.contains("send GOAWAY frame"), r.output)
    }

    func testManyStreamsOfOneConnectionAreAllWrittenWhenTheirResponsesShareATurn() throws {
        guard ChildProcess.isAvailable("h2load") else { return XCTFail("h2load (nghttp2-client) not installed") }
        // One connection, 100 streams at once: responses answered in the same loop turn leave in one
        // write (output flushed once per turn), bodies of 100 KB each overrun the output's high
        // watermark within a turn, and every byte still arrives (h2load fails a stream whose DATA
        // disagree with its content-length).
        let local = try ChildProcess.run("h2load", ["-n", "1000", "-c", "1", "-m", "100", harness.url("/local/turn")])
        XCTAssertEqual(local.status, 0, local.output)
        XCTAssertTrue(local.output.contains("1000 succeeded, 0 failed, 0 errored"), local.output)
        let forwarded = try ChildProcess.run("h2load", ["-n", "200", "-c", "1", "-m", "100", harness.url("/turn?size=100000")])
        XCTAssertEqual(forwarded.status, 0, forwarded.output)
        XCTAssertTrue(forwarded.output.contains("200 succeeded, 0 failed, 0 errored"), forwarded.output)
        XCTAssertTrue(forwarded.output.contains("status codes: 200 2xx"), forwarded.output)
        let bodies = harness.handler.completed.filter { $0.connection.protocolName == "h2" && $0.status == 200 }
            .filter { $0.target.map { String(decoding: $0, as: UTF8.self) } == "/turn?size=100000" }
        XCTAssertEqual(bodies.count, 200)
        XCTAssertTrue(bodies.allSatisfy { $0.responseBodyBytes == 100_000 && !$0.aborted }, "\(bodies.prefix(3))")
    }

    func testH2loadAllRequestsSucceed() throws {
        guard ChildProcess.isAvailable("h2load") else { return XCTFail("h2load (nghttp2-client) not installed") }
        // 2000 requests, 10 connections, 10 streams each, answered by the handler on the loops.
        let local = try ChildProcess.run("h2load", ["-n", "2000", "-c", "10", "-m", "10", harness.url("/local/load")])
        XCTAssertEqual(local.status, 0, local.output)
        XCTAssertTrue(local.output.contains("2000 succeeded, 0 failed, 0 errored"), local.output)
        XCTAssertTrue(local.output.contains("status codes: 2000 2xx"), local.output)
        // The same shape forwarded upstream (fewer requests: the Python upstream serves ~250 requests/s).
        let forwarded = try ChildProcess.run("h2load", ["-n", "400", "-c", "10", "-m", "10", harness.url("/load?size=20000")])
        XCTAssertEqual(forwarded.status, 0, forwarded.output)
        XCTAssertTrue(forwarded.output.contains("400 succeeded, 0 failed, 0 errored"), forwarded.output)
        XCTAssertTrue(forwarded.output.contains("status codes: 400 2xx"), forwarded.output)
        let records = harness.handler.completed.filter { $0.connection.protocolName == "h2" }
        XCTAssertEqual(records.count, 2400)
        let bad = records.filter { $0.aborted || $0.status != 200 }
        XCTAssertEqual(bad.count, 0, bad.prefix(5).map { "\($0.status) \($0.error?.code ?? "-") aborted=\($0.aborted)" }.joined(separator: "; "))
        XCTAssertEqual(records.filter { $0.upstream == "main" }.map(\.responseBodyBytes).reduce(0, +), 400 * 20000)
        XCTAssertGreaterThan(harness.pool.statistics.reusedExchanges, 200, "upstream keep-alive under h2 load")
    }
}
