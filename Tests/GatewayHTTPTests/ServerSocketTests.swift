import Foundation
import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import XCTest

/// The downstream side over real sockets: raw python3 clients (exact bytes, smuggling, slow
/// senders) and curl, against answers the handler gives itself (`/local/...`).
final class ServerSocketTests: XCTestCase {
    private var harness: ProxyHarness!

    override func setUpWithError() throws {
        harness = try ProxyHarness()
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    private func raw(_ steps: [RawClient.Step], timeout: Double = 3) throws -> RawClient.Result {
        try RawClient.run(port: harness.port, timeout: timeout, steps)
    }

    // MARK: basics

    func testLocalAnswerWithBodyAndKeepAlive() throws {
        let r = try raw([.send("POST /local/echo?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
                               + "GET /local/two HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.count, 2, r.text)
        XCTAssertEqual(responses.first?.status, 200)
        XCTAssertEqual(responses.first?.bodyText, "hello")
        XCTAssertEqual(responses.first?.header("X-Target"), "/local/echo?x=1")
        XCTAssertNil(responses.first?.header("Connection"))
        XCTAssertNotNil(responses.first?.header("Date"))
        XCTAssertEqual(responses.last?.header("Connection"), "close")
        XCTAssertTrue(r.closed)
    }

    func testChunkedRequestBodyDecodedWithTrailers() throws {
        let r = try raw([.send("POST /local/c HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                               + "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 42\r\n\r\n")])
        let response = try XCTUnwrap(r.responses().first, r.text)
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.bodyText, "hello world")
        XCTAssertEqual(response.header("X-Trailers"), "X-Sum=42")
    }

    func testPipelinedRequestsAnsweredInOrder() throws {
        // The second answer comes from another thread later than the third would: order must hold.
        let r = try raw([.send("GET /local/1?delay=200 HTTP/1.1\r\nHost: h\r\n\r\n"
                               + "GET /local/2 HTTP/1.1\r\nHost: h\r\n\r\n"
                               + "POST /local/3 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")])
        let responses = r.responses()
        XCTAssertEqual(responses.map { $0.header("X-Target") ?? "?" }, ["/local/1?delay=200", "/local/2", "/local/3"], r.text)
        XCTAssertEqual(responses.last?.bodyText, "abc")
        XCTAssertTrue(r.closed)
    }

    func testHTTP10KeepAliveSemantics() throws {
        let plain = try raw([.send("GET /local/a HTTP/1.0\r\n\r\n")])
        XCTAssertEqual(plain.responses().first?.status, 200)
        XCTAssertEqual(plain.responses().first?.header("Connection"), "close")
        XCTAssertTrue(plain.closed, "HTTP/1.0 without keep-alive must be closed")

        let keep = try raw([.send("GET /local/a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"),
                            .awaitResponses(1), .send("GET /local/b HTTP/1.0\r\n\r\n")])
        let responses = keep.responses()
        XCTAssertEqual(responses.count, 2, keep.text)
        XCTAssertEqual(responses.first?.header("Connection"), "keep-alive")
        XCTAssertEqual(responses.last?.header("Connection"), "close")
    }

    func testExpect100Continue() throws {
        let r = try raw([.send("POST /local/e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\nConnection: close\r\n\r\n"),
                         .await("100 Continue", count: 1), .send("data")])
        XCTAssertTrue(r.text.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"), r.text)
        XCTAssertEqual(r.responses().last?.bodyText, "data")
        // No 100 Continue when the head is refused.
        let refused = try raw([.send("POST /reject/e HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 4\r\n\r\n")])
        XCTAssertTrue(refused.text.hasPrefix("HTTP/1.1 404"), refused.text)
    }

    func testHeadDecisionRespondsWithoutReadingBody() throws {
        let r = try raw([.send("POST /reject/x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
                               + "GET /local/next HTTP/1.1\r\nHost: h\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.count, 1, r.text)
        XCTAssertEqual(responses.first?.status, 404)
        XCTAssertEqual(responses.first?.header("Connection"), "close")
        XCTAssertTrue(r.closed)
        // Without a body the connection stays usable and the next request is answered in order.
        let kept = try raw([.send("GET /reject/x HTTP/1.1\r\nHost: h\r\n\r\nGET /local/next HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        XCTAssertEqual(kept.responses().map(\.status), [404, 200], kept.text)
    }

    func testHandlerThatDropsItsResponderGets500() throws {
        let r = try raw([.send("GET /drop/x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        let response = try XCTUnwrap(r.responses().first, r.text)
        XCTAssertEqual(response.status, 500)
        XCTAssertEqual(response.header("X-Error"), "handler_did_not_respond")
    }

    // MARK: request smuggling and malformed input

    private func assertRefused(_ request: String, status: Int, code: String,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let before = harness.handler.completed.count
        let r = try raw([.send(request)])
        let responses = r.responses()
        XCTAssertEqual(responses.count, 1, "exactly one answer, nothing smuggled: \(r.text)", file: file, line: line)
        XCTAssertEqual(responses.first?.status, status, r.text, file: file, line: line)
        XCTAssertEqual(responses.first?.header("X-Error"), code, file: file, line: line)
        XCTAssertEqual(responses.first?.header("Connection"), "close", file: file, line: line)
        XCTAssertTrue(r.closed, "connection must be closed after \(code)", file: file, line: line)
        // Nothing behind the bad request reached the handler.
        let after = harness.handler.completed
        XCTAssertEqual(after.count, before + 1, file: file, line: line)
        XCTAssertEqual(after.last?.error?.code, code, file: file, line: line)
    }

    func testContentLengthWithTransferEncodingRefusedAndClosed() throws {
        try assertRefused("POST /local/a HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n"
                          + "0\r\n\r\nGET /local/smuggled HTTP/1.1\r\nHost: h\r\n\r\n",
                          status: 400, code: "content_length_with_transfer_encoding")
    }

    func testDuplicateContentLengthRefused() throws {
        try assertRefused("POST /local/a HTTP/1.1\r\nHost: h\r\nContent-Length: 4\r\nContent-Length: 4\r\n\r\nabcd",
                          status: 400, code: "duplicate_content_length")
    }

    func testBadTransferEncodingRefused() throws {
        try assertRefused("POST /local/a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
                          status: 400, code: "bad_transfer_encoding")
        try assertRefused("POST /local/a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
                          status: 400, code: "bad_transfer_encoding")
    }

    func testBareLineFeedAndObsFoldRefused() throws {
        try assertRefused("GET /local/a HTTP/1.1\nHost: h\n\n", status: 400, code: "bare_line_ending")
        try assertRefused("GET /local/a HTTP/1.1\r\nHost: h\r\nX-A: 1\r\n folded\r\n\r\n", status: 400, code: "obs_fold")
        try assertRefused("GET /local/a HTTP/1.1\r\nHost: h\r\nX-A : 1\r\n\r\n", status: 400, code: "bad_header")
    }

    func testTargetsNotInNormalFormRefused() throws {
        try assertRefused("GET //local/a HTTP/1.1\r\nHost: h\r\n\r\n", status: 400, code: "target_empty_segment")
        try assertRefused("GET /local/../admin HTTP/1.1\r\nHost: h\r\n\r\n", status: 400, code: "target_dot_segment")
        try assertRefused("GET /local%2Fadmin HTTP/1.1\r\nHost: h\r\n\r\n", status: 400, code: "target_encoded_separator")
        try assertRefused("GET /%6Cocal/a HTTP/1.1\r\nHost: h\r\n\r\n", status: 400, code: "target_encoded_unreserved")
        try assertRefused("GET http://h/local/a HTTP/1.1\r\nHost: h\r\n\r\n", status: 400, code: "target_not_origin_form")
    }

    func testInvalidHostRefused() throws {
        for host in ["Host: a b\r\n", "Host: a/b\r\n", "Host:\r\n", "Host: h\r\nHost: h\r\n", "", "Host: [::1\r\n"] {
            try assertRefused("GET /local/a HTTP/1.1\r\n\(host)\r\n", status: 400, code: "host_invalid")
        }
        let ok = try raw([.send("GET /local/a HTTP/1.1\r\nHost: [::1]:8080\r\nConnection: close\r\n\r\n")])
        XCTAssertEqual(ok.responses().first?.status, 200, ok.text)
    }

    func testHeaderLimits() throws {
        try assertRefused("GET /local/a HTTP/1.1\r\nHost: h\r\nX-Big: " + String(repeating: "a", count: 40000) + "\r\n\r\n",
                          status: 431, code: "header_too_large")
        let many = (0..<101).map { "X-\($0): v\r\n" }.joined()
        try assertRefused("GET /local/a HTTP/1.1\r\nHost: h\r\n" + many + "\r\n", status: 431, code: "too_many_headers")
    }

    // MARK: persistence (timeouts: HTTP1ConnectionMachineTests, ServerTimerSocketTests)

    func testMaxRequestsPerConnection() throws {
        let h = try ProxyHarness(maxRequestsPerConnection: 2)
        defer { h.stop() }
        let r = try RawClient.run(port: h.port, [.send("GET /local/1 HTTP/1.1\r\nHost: h\r\n\r\nGET /local/2 HTTP/1.1\r\nHost: h\r\n\r\n"
                                                      + "GET /local/3 HTTP/1.1\r\nHost: h\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.count, 2, r.text)
        XCTAssertEqual(responses.last?.header("Connection"), "close")
        XCTAssertTrue(r.closed)
    }

    // MARK: listeners

    func testIPv6AndUnixListeners() throws {
        guard PlatformSupport.hasIPv6Loopback else { throw XCTSkip("this machine cannot bind [::1] (no IPv6 loopback)") }
        let path = harness.tempDir.appendingPathComponent("gw.sock").path
        let group = EventLoopGroup(loopCount: 1, timerResolution: 0.02)
        defer { group.shutdown() }
        let server = HTTPServer(configuration: HTTPServerConfiguration(listeners: [.tcp(host: "::1", port: 0), .unix(path: path)]),
                                group: group, handler: harness.handler)
        let bound = try server.start()  // an error here is a failure: IPv6 loopback works on this machine
        defer {
            let done = DispatchSemaphore(value: 0)
            server.shutdown(gracePeriod: 1) { done.signal() }
            XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "the server shut down within 5 s")
        }
        let v6Port = try XCTUnwrap(bound.first?.port)
        XCTAssertTrue(bound.first?.address.hasPrefix("[::1]:") ?? false)
        XCTAssertNil(bound.last?.port)
        let v6 = try Curl.run(["-g", "-D", "-", "http://[::1]:\(v6Port)/local/v6"])
        XCTAssertTrue(v6.output.contains("X-Target: /local/v6"), v6.output)
        let unix = try Curl.run(["-D", "-", "--unix-socket", path, "http://localhost/local/unix"])
        XCTAssertTrue(unix.output.contains("X-Target: /local/unix"), unix.output)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
    }

    /// `0.0.0.0:P` and `[::]:P` together serve both families on one port (the IPv6 socket is
    /// IPv6-only), as the configuration allows them.
    func testIPv4AndIPv6WildcardsShareAPort() throws {
        guard PlatformSupport.hasIPv6Loopback else { throw XCTSkip("this machine cannot bind [::1] (no IPv6 loopback)") }
        let port = FreePort.allocate()
        let group = EventLoopGroup(loopCount: 1, timerResolution: 0.02)
        defer { group.shutdown() }
        let server = HTTPServer(configuration: HTTPServerConfiguration(listeners: [.tcp(host: "0.0.0.0", port: port),
                                                                                   .tcp(host: "::", port: port)]),
                                group: group, handler: harness.handler)
        let bound = try server.start()
        defer {
            let done = DispatchSemaphore(value: 0)
            server.shutdown(gracePeriod: 1) { done.signal() }
            XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "the server shut down within 5 s")
        }
        XCTAssertEqual(bound.map(\.port), [port, port])
        let v4 = try Curl.run(["-D", "-", "http://127.0.0.1:\(port)/local/v4"])
        XCTAssertTrue(v4.output.contains("X-Target: /local/v4"), v4.output)
        let v6 = try Curl.run(["-g", "-D", "-", "http://[::1]:\(port)/local/v6"])
        XCTAssertTrue(v6.output.contains("X-Target: /local/v6"), v6.output)
    }

    func testAccessRecords() throws {
        _ = try raw([.send("POST /local/log HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")])
        let record = try XCTUnwrap(harness.handler.completed.last)
        XCTAssertEqual(record.status, 200)
        XCTAssertEqual(record.method, .post)
        XCTAssertEqual(record.targetString, "/local/log")
        XCTAssertEqual(record.requestBodyBytes, 3)
        XCTAssertEqual(record.responseBodyBytes, 3)
        XCTAssertNil(record.error)
        XCTAssertFalse(record.aborted)
    }
}
