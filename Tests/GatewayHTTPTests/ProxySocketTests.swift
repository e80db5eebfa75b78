import Foundation
import GatewayHTTP
import GatewayTestSupport
import XCTest

/// Proxying over real sockets: curl / python3 clients -> HTTPServer -> UpstreamPool -> a real
/// Python upstream (TCP and Unix socket) that reports exactly what it received.
final class ProxySocketTests: XCTestCase {
    private var harness: ProxyHarness!

    override func setUpWithError() throws {
        harness = try ProxyHarness(withUnixUpstream: true)
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    private func raw(_ steps: [RawClient.Step], timeout: Double = 5) throws -> RawClient.Result {
        try RawClient.run(port: harness.port, timeout: timeout, steps)
    }

    private func echoHeaders(_ r: RawResponse) -> [(String, String)] {
        (r.json["headers"] as? [[String]] ?? []).map { ($0[0], $0.count > 1 ? $0[1] : "") }
    }

    private func sha256Hex(_ bytes: [UInt8]) throws -> String {
        let r = try ChildProcess.run("sha256sum", [], stdin: Data(bytes))
        return String(r.output.prefix(64))
    }

    // MARK: pipelining

    /// Two pipelined POSTs of 200 KB and a GET in one write (a probe's case): the second body
    /// outgrows the kept-input bound while the first is answered, so reading pauses; it resumes
    /// once the second request takes the kept bytes, and all three are answered in order (before the
    /// fix: the second waited for the body timeout, 408, the third was never served).
    func testPipelinedLargeBodiesAreAllAnsweredInOrder() throws {
        let body = String(repeating: "p", count: 200_000)
        let post = { (n: Int) in "POST /pipe/\(n) HTTP/1.1\r\nHost: h\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body }
        let r = try raw([.send(post(1) + post(2) + "GET /pipe/3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")], timeout: 10)
        let responses = r.responses()
        XCTAssertEqual(responses.map(\.status), [200, 200, 200], r.text.prefix(2000).description)
        XCTAssertEqual(responses.map { ($0.json["target"] as? String) ?? "-" }, ["/pipe/1", "/pipe/2", "/pipe/3"])
        XCTAssertEqual(responses.prefix(2).map { $0.json["bodyLength"] as? Int }, [200_000, 200_000])
    }

    // MARK: forwarding

    func testForwardPreservesTargetAndStripsHopByHopFields() throws {
        let r = try raw([.send("GET /api/items?b=2&a=%2F&a=1 HTTP/1.1\r\nHost: example.test\r\n"
                               + "Connection: keep-alive, X-Custom-Hop\r\nX-Custom-Hop: secret\r\nKeep-Alive: timeout=5\r\n"
                               + "TE: trailers\r\nUpgrade: websocket\r\nProxy-Connection: keep-alive\r\nTrailer: X-T\r\n"
                               + "X-Strip-Me: 1\r\nx-STRIP-two: 2\r\nX-Keep: Yes\r\nX-Gateway: forged\r\n"
                               + "Authorization: Bearer t\r\n\r\n"),
                         .awaitResponses(1), .send("GET /api/second HTTP/1.1\r\nHost: example.test\r\nConnection: close\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.count, 2, r.text)
        let echo = try XCTUnwrap(responses.first)
        XCTAssertEqual(echo.status, 200)
        XCTAssertEqual(echo.json["target"] as? String, "/api/items?b=2&a=%2F&a=1")
        XCTAssertEqual(echo.json["method"] as? String, "GET")
        let names = echoHeaders(echo).map { $0.0.lowercased() }
        for hop in ["connection", "x-custom-hop", "keep-alive", "te", "upgrade", "proxy-connection", "trailer",
                    "x-strip-me", "x-strip-two", "transfer-encoding", "expect"] {
            XCTAssertFalse(names.contains(hop), "\(hop) must not be forwarded: \(names)")
        }
        let forwarded = Dictionary(echoHeaders(echo), uniquingKeysWith: { a, _ in a })
        XCTAssertEqual(forwarded["Host"], "example.test")
        XCTAssertEqual(forwarded["X-Keep"], "Yes", "end-to-end fields keep their case and value")
        XCTAssertEqual(forwarded["Authorization"], "Bearer t")
        XCTAssertEqual(names.filter { $0 == "x-gateway" }.count, 1)
        XCTAssertEqual(forwarded["X-Gateway"], "1", "the handler's replacement wins over the client's copy")
        XCTAssertNil(forwarded["Content-Length"], "GET without body carries no Content-Length")
        XCTAssertEqual(responses.last?.json["target"] as? String, "/api/second")
    }

    func testResponseHopByHopFieldsStripped() throws {
        let (status, output) = try Curl.run(["-D", "-", "-o", "/dev/null", harness.url("/x?hop=1")])
        XCTAssertEqual(status, 0, output)
        let lower = output.lowercased()
        XCTAssertTrue(lower.contains("x-end-to-end: passes"), output)
        XCTAssertFalse(lower.contains("x-hop-secret"), output)
        XCTAssertFalse(lower.contains("keep-alive: timeout"), output)
        XCTAssertFalse(lower.contains("proxy-connection"), output)
        XCTAssertFalse(lower.contains("upgrade:"), output)
        XCTAssertFalse(lower.contains("http2-settings"), "connection-specific even when Connection does not name it: \(output)")
        XCTAssertFalse(lower.contains("proxy-authenticate"), output)
        XCTAssertTrue(lower.contains("content-length:"), output)
    }

    /// The connection-specific fields of `HopByHop.fieldNames` are dropped even when the client's
    /// `Connection` does not name them (an h2c upgrade attempt naming only `Upgrade`).
    func testConnectionSpecificFieldsNeverForwardedEvenWhenNotNamed() throws {
        let r = try raw([.send("GET /api/h2c HTTP/1.1\r\nHost: h\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n"
                               + "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nTE: trailers\r\nKeep-Alive: timeout=5\r\n"
                               + "Proxy-Connection: keep-alive\r\nProxy-Authorization: Basic dXNlcjpwYXNz\r\n"
                               + "Expect: 100-continue\r\nX-End-To-End: passes\r\n\r\n"),
                         .awaitResponses(1), .send("GET /api/after HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.count, 2, r.text)
        let echo = try XCTUnwrap(responses.first)
        XCTAssertEqual(echo.status, 200, "the upgrade is not tunnelled: a plain request and answer")
        let names = echoHeaders(echo).map { $0.0.lowercased() }
        for hop in ["connection", "upgrade", "http2-settings", "te", "keep-alive", "proxy-connection",
                    "proxy-authorization", "expect"] {
            XCTAssertFalse(names.contains(hop), "\(hop) must not be forwarded: \(names)")
        }
        XCTAssertTrue(names.contains("x-end-to-end"), "end-to-end fields pass: \(names)")
        XCTAssertEqual(responses.last?.json["target"] as? String, "/api/after")
    }

    /// A client's `Connection` options remove the client's own fields, never the ones the handler
    /// sets afterwards (`X-Gateway` here): hop-by-hop removal applies to what the previous hop sent.
    func testConnectionOptionsCannotRemoveFieldsTheHandlerSets() throws {
        let r = try raw([.send("GET /api/options HTTP/1.1\r\nHost: h\r\nConnection: X-Gateway, X-Custom-Hop\r\n"
                               + "Connection: x-keep-as-well\r\nX-Custom-Hop: secret\r\nX-Gateway: forged\r\n"
                               + "X-Keep-As-Well: client-named\r\nX-Keep: yes\r\nConnection: close\r\n\r\n")])
        let echo = try XCTUnwrap(r.responses().first, r.text)
        XCTAssertEqual(echo.status, 200, r.text)
        let headers = echoHeaders(echo)
        let names = headers.map { $0.0.lowercased() }
        XCTAssertEqual(headers.filter { $0.0.lowercased() == "x-gateway" }.map(\.1), ["1"], "the handler's field is delivered: \(headers)")
        XCTAssertFalse(names.contains("x-custom-hop"), "a field the client named is still removed: \(names)")
        XCTAssertFalse(names.contains("x-keep-as-well"), "options from every Connection line count: \(names)")
        XCTAssertTrue(names.contains("x-keep"), "fields not named pass: \(names)")
        XCTAssertFalse(names.contains("connection"), names.description)
    }

    func testKeepAliveReusedOnBothSides() throws {
        let (status, output) = try Curl.run(["-w", "\\n%{num_connects}\\n", harness.url("/a"), harness.url("/b"), harness.url("/c")])
        XCTAssertEqual(status, 0, output)
        let lines = output.split(separator: "\n").map(String.init)
        // Downstream: one connection for three requests.
        XCTAssertEqual(lines.filter { $0 == "1" || $0 == "0" }, ["1", "0", "0"], output)
        // Upstream: all three on the same pooled connection.
        let serials = lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
            .compactMap { $0["connection"] as? Int }
        XCTAssertEqual(serials.count, 3, output)
        XCTAssertEqual(Set(serials).count, 1, "upstream connection reused: \(serials)")
        XCTAssertEqual(harness.pool.statistics.connectionsOpened, 1)
        XCTAssertEqual(harness.pool.statistics.reusedExchanges, 2)
        XCTAssertEqual(try harness.upstream.stats().connections, 2, "one proxy connection plus the stats request itself")
    }

    func testPipelinedRequestsProxiedInOrder() throws {
        let r = try raw([.send("GET /p/1?delay=150 HTTP/1.1\r\nHost: h\r\n\r\n"
                               + "POST /p/2 HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhello"
                               + "GET /local/3 HTTP/1.1\r\nHost: h\r\n\r\n"
                               + "GET /p/4 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.count, 4, r.text)
        XCTAssertEqual(responses[0].json["target"] as? String, "/p/1?delay=150")
        XCTAssertEqual(responses[1].json["target"] as? String, "/p/2")
        XCTAssertEqual(responses[1].json["bodyLength"] as? Int, 5)
        XCTAssertEqual(responses[2].header("X-Target"), "/local/3")
        XCTAssertEqual(responses[3].json["target"] as? String, "/p/4")
        XCTAssertTrue(r.closed)
    }

    func testChunkedRequestBodyForwardedWithOneContentLength() throws {
        let r = try raw([.send("POST /upload HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                               + "5\r\nhello\r\n1;ext=x\r\n \r\n5\r\nworld\r\n0\r\nX-Checksum: abc\r\nX-Strip-Trailer: t\r\n\r\n")])
        let echo = try XCTUnwrap(r.responses().first, r.text)
        XCTAssertEqual(echo.status, 200)
        XCTAssertEqual(echo.json["bodyLength"] as? Int, 11)
        XCTAssertEqual(echo.json["bodySHA256"] as? String, try sha256Hex(Array("hello world".utf8)))
        let headers = echoHeaders(echo)
        XCTAssertEqual(headers.filter { $0.0.lowercased() == "content-length" }.map(\.1), ["11"])
        XCTAssertFalse(headers.contains { $0.0.lowercased() == "transfer-encoding" })
        XCTAssertFalse(headers.contains { $0.0.lowercased().hasPrefix("x-checksum") }, "trailers are not forwarded as fields")
    }

    func testPostWithoutBodyGetsContentLengthZero() throws {
        let (status, output) = try Curl.run(["-X", "POST", harness.url("/empty")])
        XCTAssertEqual(status, 0, output)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        let headers = (json["headers"] as? [[String]] ?? []).filter { $0[0].lowercased() == "content-length" }
        XCTAssertEqual(headers.map { $0[1] }, ["0"])
        XCTAssertEqual(json["bodyLength"] as? Int, 0)
    }

    func testLargeRequestBodyForwarded() throws {
        let body = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let file = harness.tempDir.appendingPathComponent("body.bin")
        try Data(body).write(to: file)
        let (status, output) = try Curl.run(["-H", "Expect:", "--data-binary", "@\(file.path)", harness.url("/big-upload")])
        XCTAssertEqual(status, 0, output)
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])
        XCTAssertEqual(json["bodyLength"] as? Int, body.count)
        XCTAssertEqual(json["bodySHA256"] as? String, try sha256Hex(body))
    }

    // MARK: limits

    func testBodyOverLimitIs413ForContentLengthAndChunked() throws {
        // Content-Length over the limit: refused before the body is read.
        let byLength = try raw([.send("POST /limited/x HTTP/1.1\r\nHost: h\r\nContent-Length: 17\r\n\r\n")])
        XCTAssertEqual(byLength.responses().first?.status, 413, byLength.text)
        XCTAssertEqual(byLength.responses().first?.header("X-Error"), "body_too_large")
        XCTAssertTrue(byLength.closed)
        // Chunked: counted on decoded bytes as they arrive.
        let chunked = try raw([.send("POST /limited/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     + "a\r\n0123456789\r\n7\r\nabcdefg\r\n0\r\n\r\n")])
        XCTAssertEqual(chunked.responses().first?.status, 413, chunked.text)
        XCTAssertTrue(chunked.closed)
        // Exactly at the limit: forwarded.
        let ok = try raw([.send("POST /limited/x HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                + "a\r\n0123456789\r\n6\r\nabcdef\r\n0\r\n\r\n")])
        XCTAssertEqual(ok.responses().first?.status, 200, ok.text)
        XCTAssertEqual(ok.responses().first?.json["bodyLength"] as? Int, 16)
        XCTAssertEqual(try harness.upstream.stats().requests, 2, "only the accepted request reached the upstream (plus stats)")
    }

    // MARK: upstream failures

    func testUpstreamDownIs502AndConnectionStaysUsable() throws {
        let r = try raw([.send("GET /dead/x HTTP/1.1\r\nHost: h\r\n\r\nGET /ok HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.map(\.status), [502, 200], r.text)
        XCTAssertEqual(responses.first?.header("X-Error"), "upstream_unavailable")
        XCTAssertEqual(harness.handler.completed.first?.error, .upstreamUnavailable)
        XCTAssertEqual(harness.handler.completed.first?.upstream, "dead")
    }

    func testUpstreamTooSlowIs504() throws {
        let (status, output) = try Curl.run(["-D", "-", harness.url("/slow/x?delay=1500")])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasPrefix("HTTP/1.1 504"), output)
        XCTAssertTrue(output.contains("upstream_timeout"), output)
    }

    /// The response timeout runs from the request to the response head however the head arrives:
    /// interim responses every 100 ms (each a read) do not extend the 0.3 s of the slow pool.
    func testInterimResponsesDoNotExtendTheResponseTimeout() throws {
        let (status, output) = try Curl.run(["-D", "-", harness.url("/slow/x?interim=100")])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasPrefix("HTTP/1.1 504"), output)
        XCTAssertTrue(output.contains("upstream_timeout"), output)
    }

    func testUpstreamStallingMidBodyClosesDownstream() throws {
        // The head is already relayed when the body stalls past the response timeout: the only honest
        // signal left is closing the connection, so the client sees a truncated body.
        let (status, output) = try Curl.run(["-o", "/dev/null", "-w", "%{http_code}", harness.url("/slow/x?size=200000&slowbody=1500")])
        XCTAssertEqual(output.suffix(3), "200")
        XCTAssertEqual(status, 18, "curl: partial transfer; \(output)")
        XCTAssertEqual(harness.handler.completed.last?.aborted, true)
    }

    /// A client that closes (or half-closes: an end of file cannot tell them apart) while its request
    /// waits for the upstream: the exchange stops at once, recorded as 499 (nginx's default). Before,
    /// the gateway waited for the upstream's answer (up to `response_timeout`, both sockets held)
    /// and then wrote it to nobody (recorded as its status, 200).
    func testClientClosingWhileWaitingForTheUpstreamIs499() throws {
        _ = try raw([.send("GET /gone/x?delay=3000 HTTP/1.1\r\nHost: h\r\n\r\n"), .sleep(300), .shutdown], timeout: 0.5)
        waitFor("the exchange's record") { !harness.handler.completed.isEmpty }
        let record = try XCTUnwrap(harness.handler.completed.first)
        XCTAssertEqual(record.status, 499, "\(record)")
        XCTAssertEqual(record.aborted, true)
    }

    func testUpstreamConnectTimeoutIs504() throws {
        let (status, output) = try Curl.run(["-D", "-", harness.url("/blackhole/x")])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasPrefix("HTTP/1.1 504"), output)
        XCTAssertTrue(output.contains("upstream_connect_timeout"), output)
    }

    func testMalformedUpstreamResponseIs502() throws {
        let (_, output) = try Curl.run(["-D", "-", harness.url("/x?malformed=1")])
        XCTAssertTrue(output.hasPrefix("HTTP/1.1 502"), output)
        XCTAssertTrue(output.contains("upstream_bad_response"), output)
    }

    func testUpstreamClosingWithoutAnswerIs502() throws {
        let (_, output) = try Curl.run(["-D", "-", harness.url("/x?reset=1")])
        XCTAssertTrue(output.hasPrefix("HTTP/1.1 502"), output)
        XCTAssertTrue(output.contains("upstream_reset"), output)
    }

    func testStalePooledConnectionRetriedOnlyWhenSafe() throws {
        // The upstream answers, keeps the connection, then drops the next request on it unanswered.
        let get = try raw([.send("GET /a?dropnext=1 HTTP/1.1\r\nHost: h\r\n\r\n"), .awaitResponses(1),
                           .send("GET /b HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        XCTAssertEqual(get.responses().map(\.status), [200, 200], "idempotent GET is retried on a fresh connection: \(get.text)")
        XCTAssertEqual(harness.pool.statistics.retries, 1)
        let serials = get.responses().compactMap { $0.json["connection"] as? Int }
        XCTAssertEqual(serials.count, 2)
        XCTAssertNotEqual(serials.first, serials.last)

        let post = try raw([.send("POST /a?dropnext=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\n\r\nx"), .awaitResponses(1),
                            .send("POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nConnection: close\r\n\r\ny")])
        XCTAssertEqual(post.responses().map(\.status), [200, 502], "a POST that was written is never re-sent: \(post.text)")
        XCTAssertEqual(post.responses().last?.header("X-Error"), "upstream_reset")
        XCTAssertEqual(harness.pool.statistics.retries, 1)
    }

    /// Envoy's retry-buffer rule: an idempotent request is re-sent on a fresh connection only when
    /// the exchange kept it, i.e. when it is at most `UpstreamExchange.retryBufferBytes` (64 KiB,
    /// head and body); a larger PUT that reached a stale pooled connection is answered 502, not
    /// re-sent (its bytes are let go once written, so that a slow upstream does not make the gateway
    /// hold every body).
    func testLargeRequestOnStalePooledConnectionIsNotResent() throws {
        let large = String(repeating: "x", count: 64 << 10)  // with its head, over the 64 KiB retry buffer
        let put = try raw([.send("GET /a?dropnext=1 HTTP/1.1\r\nHost: h\r\n\r\n"), .awaitResponses(1),
                           .send("PUT /b HTTP/1.1\r\nHost: h\r\nContent-Length: \(large.utf8.count)\r\nConnection: close\r\n\r\n\(large)")])
        XCTAssertEqual(put.responses().map(\.status), [200, 502], "a PUT over the retry buffer is not re-sent: \(put.text.prefix(2000))")
        XCTAssertEqual(put.responses().last?.header("X-Error"), "upstream_reset")
        XCTAssertEqual(harness.pool.statistics.retries, 0)

        let small = try raw([.send("GET /c?dropnext=1 HTTP/1.1\r\nHost: h\r\n\r\n"), .awaitResponses(1),
                             .send("PUT /d HTTP/1.1\r\nHost: h\r\nContent-Length: 1000\r\nConnection: close\r\n\r\n"
                                   + String(repeating: "y", count: 1000))])
        XCTAssertEqual(small.responses().map(\.status), [200, 200], "a small PUT is re-sent: \(small.text)")
        XCTAssertEqual(harness.pool.statistics.retries, 1)
    }

    func testConcurrentKeepAliveClientsAcrossLoops() throws {
        // 16 clients x 25 requests, mixed local answers, echoes, chunked and sized bodies, POSTs.
        let client = try ChildProcess("python3", ["-c", """
            import hashlib, http.client, json, random, threading
            errors = []
            def worker(n):
                rnd = random.Random(n)
                conn = http.client.HTTPConnection("127.0.0.1", \(harness.port), timeout=20)
                for i in range(25):
                    kind = rnd.choice(["size", "chunked", "echo", "local", "post"])
                    try:
                        if kind == "post":
                            body = bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 5000)))
                            conn.request("POST", "/p/%d/%d" % (n, i), body=body)
                            r = conn.getresponse(); data = json.loads(r.read())
                            ok = r.status == 200 and data["bodySHA256"] == hashlib.sha256(body).hexdigest()
                        elif kind == "local":
                            conn.request("GET", "/local/%d/%d" % (n, i))
                            r = conn.getresponse(); r.read()
                            ok = r.status == 200 and r.getheader("X-Target") == "/local/%d/%d" % (n, i)
                        elif kind == "echo":
                            conn.request("GET", "/e/%d/%d?q=%d" % (n, i, i))
                            r = conn.getresponse(); data = json.loads(r.read())
                            ok = r.status == 200 and data["target"] == "/e/%d/%d?q=%d" % (n, i, i)
                        else:
                            size = rnd.randint(0, 300000)
                            conn.request("GET", "/d/%d/%d?%s=%d" % (n, i, kind, size))
                            r = conn.getresponse(); data = r.read()
                            ok = r.status == 200 and len(data) == size and hashlib.sha256(data).hexdigest() == r.getheader("X-Content-SHA256")
                        if not ok:
                            errors.append("%s %d %d" % (kind, n, i))
                    except Exception as e:
                        errors.append("%s %d %d %r" % (kind, n, i, e))
                        conn = http.client.HTTPConnection("127.0.0.1", \(harness.port), timeout=20)
            threads = [threading.Thread(target=worker, args=(n,)) for n in range(16)]
            [t.start() for t in threads]; [t.join() for t in threads]
            print("ERRORS", len(errors), errors[:5], flush=True)
            """])
        XCTAssertEqual(client.wait(), 0, client.output)
        XCTAssertTrue(client.output.contains("ERRORS 0 []"), client.output)
        let stats = harness.pool.statistics
        XCTAssertGreaterThan(stats.reusedExchanges, 0, "pooled connections reused under load")
        XCTAssertEqual(harness.handler.completed.filter { $0.aborted || $0.error != nil }.count, 0)
    }

    // MARK: response framing

    func testHeadRequestRelaysLengthWithoutBody() throws {
        let r = try raw([.send("HEAD /h?size=12345 HTTP/1.1\r\nHost: h\r\n\r\nGET /h2 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        let responses = r.responses(headRequests: [0])
        XCTAssertEqual(responses.count, 2, r.text)
        XCTAssertEqual(responses[0].status, 200)
        XCTAssertEqual(responses[0].header("Content-Length"), "12345")
        XCTAssertEqual(responses[1].json["target"] as? String, "/h2", "framing intact after HEAD")
        // The upstream connection that answered the HEAD is closed, not pooled (a body an upstream
        // sends there anyway could arrive after the next request and pass for its response): the GET
        // went out on a second connection.
        XCTAssertEqual(harness.pool.statistics.connectionsOpened, 2)
        XCTAssertEqual(harness.pool.statistics.reusedExchanges, 0)
        let curl = try Curl.run(["-I", harness.url("/h?size=99")])
        XCTAssertTrue(curl.output.contains("Content-Length: 99"), curl.output)
    }

    func testNoContentAndNotModified() throws {
        let r = try raw([.send("GET /n?status=204 HTTP/1.1\r\nHost: h\r\n\r\nGET /n?status=304 HTTP/1.1\r\nHost: h\r\n\r\n"
                               + "GET /after HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        let responses = r.responses()
        XCTAssertEqual(responses.map(\.status), [204, 304, 200], r.text)
        XCTAssertNil(responses[0].header("Content-Length"))
        XCTAssertNil(responses[0].header("Transfer-Encoding"))
        XCTAssertEqual(responses[2].json["target"] as? String, "/after")
    }

    func testLargeStreamedResponses() throws {
        for query in ["size=8388608", "chunked=5000000&chunksize=65536", "untilclose=3000000"] {
            let file = harness.tempDir.appendingPathComponent("out.bin")
            let (status, headers) = try Curl.run(["-D", "-", "-o", file.path, harness.url("/large?\(query)")])
            XCTAssertEqual(status, 0, headers)
            XCTAssertTrue(headers.hasPrefix("HTTP/1.1 200"), headers)
            let expected = headers.split(separator: "\r\n").first { $0.lowercased().hasPrefix("x-content-sha256:") }?
                .split(separator: " ").last.map(String.init)
            let got = try ChildProcess.run("sha256sum", [file.path]).output.prefix(64)
            XCTAssertEqual(expected, String(got), query)
            if query.hasPrefix("size") {
                XCTAssertTrue(headers.contains("Content-Length: 8388608"), headers)
            } else {
                XCTAssertTrue(headers.contains("Transfer-Encoding: chunked"), "re-chunked: \(headers)")
            }
        }
        // HTTP/1.0 client, unknown length: delimited by close.
        let file = harness.tempDir.appendingPathComponent("out10.bin")
        let (status, headers) = try Curl.run(["-0", "-D", "-", "-o", file.path, harness.url("/large?chunked=100000")])
        XCTAssertEqual(status, 0, headers)
        XCTAssertFalse(headers.contains("Transfer-Encoding"), headers)
        XCTAssertTrue(headers.contains("Connection: close"), headers)
        XCTAssertEqual((try? FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int), 100000)
    }

    func testSlowReaderGetsEverythingThroughBackpressure() throws {
        // A client with a small receive window reading slowly: the proxy's queue passes its high
        // watermark, so it pauses reading the upstream and resumes when the client catches up.
        let client = try ChildProcess("python3", ["-c", """
            import hashlib, socket, time
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16384)
            s.connect(("127.0.0.1", \(harness.port)))
            s.sendall(b"GET /large?size=4194304 HTTP/1.1\\r\\nHost: h\\r\\n\\r\\n")
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                data += s.recv(65536)
            head, body = data.split(b"\\r\\n\\r\\n", 1)
            while len(body) < 4194304:
                chunk = s.recv(16384)
                if not chunk:
                    break
                body += chunk
                time.sleep(0.002)
            sha = [l.split(b": ")[1] for l in head.split(b"\\r\\n") if l.lower().startswith(b"x-content-sha256")][0]
            print("OK" if hashlib.sha256(body).hexdigest().encode() == sha else "MISMATCH", len(body), flush=True)
            s.sendall(b"GET /after HTTP/1.1\\r\\nHost: h\\r\\nConnection: close\\r\\n\\r\\n")
            rest = b""
            while True:
                c = s.recv(65536)
                if not c:
                    break
                rest += c
            print("AFTER" if b'"/after"' in rest else "NOAFTER", flush=True)
            """])
        XCTAssertEqual(client.wait(), 0, client.output)
        XCTAssertTrue(client.output.contains("OK 4194304"), client.output)
        XCTAssertTrue(client.output.contains("AFTER"), client.output)
        XCTAssertEqual(harness.pool.statistics.connectionsOpened, 1, "the upstream connection went back to the pool after the paused exchange")
    }

    func testChunkedUpstreamTrailersDropped() throws {
        let r = try raw([.send("GET /t?chunked=10&trailers=1 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")])
        XCTAssertEqual(r.responses().first?.body.count, 10, r.text)
        XCTAssertFalse(r.text.contains("X-Trailer"), r.text)
        XCTAssertFalse(r.text.lowercased().contains("trailer:"), r.text)
    }

    // MARK: Unix socket upstream

    func testUnixSocketUpstream() throws {
        let (status, output) = try Curl.run([harness.url("/unix/path?q=1"), harness.url("/unix/again")])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("\"target\": \"/unix/path?q=1\""), output)
        XCTAssertTrue(output.contains("\"target\": \"/unix/again\""), output)
        XCTAssertEqual(harness.unixPool?.statistics.connectionsOpened, 1)
        // The default Host for a request without one (HTTP/1.0) is "localhost" for Unix upstreams.
        let r = try raw([.send("GET /unix/nohost HTTP/1.0\r\n\r\n")])
        let host = echoHeaders(try XCTUnwrap(r.responses().first)).first { $0.0.lowercased() == "host" }?.1
        XCTAssertEqual(host, "localhost")
    }

    // MARK: shutdown

    func testShutdownClosesIdleKeepAliveConnections() throws {
        // A keep-alive client that stays idle (its idle timeout is 60 s here, the grace period 30 s).
        let h = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 10, bodyRead: 10, idle: 60, write: 10, linger: 10))
        defer { h.stop() }
        let client = try ChildProcess("python3", ["-c", """
            import socket, time
            s = socket.create_connection(("127.0.0.1", \(h.port)))
            s.sendall(b"GET /local/x HTTP/1.1\\r\\nHost: h\\r\\n\\r\\n")
            data = b""
            while b"\\r\\n\\r\\n" not in data:
                data += s.recv(4096)
            print("ANSWERED", flush=True)
            s.settimeout(25)
            rest = s.recv(4096)
            print("CLOSED" if rest == b"" else "DATA", flush=True)
            """])
        let deadline = Date().addingTimeInterval(10)
        while !client.output.contains("ANSWERED") && Date() < deadline { usleep(20_000) }
        XCTAssertTrue(client.output.contains("ANSWERED"), client.output)
        let done = DispatchSemaphore(value: 0)
        h.server.shutdown(gracePeriod: 30) { done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "idle connections are closed at once, not after the grace period")
        XCTAssertEqual(client.wait(), 0)
        XCTAssertTrue(client.output.contains("CLOSED"), client.output)
    }

    func testGracefulShutdownDrainsInFlightRequest() throws {
        // The upstream answers after 2.5 s, far inside the 5 s grace and far beyond the wait below, so
        // the shutdown always starts with the request in flight (no race with a short delay).
        let curl = try ChildProcess("curl", ["-s", "-D", "-", "--max-time", "20", harness.url("/inflight?delay=2500")])
        // Wait until the request is in flight (the gateway decided its head), then shut down.
        waitFor("the request's head decided", timeout: 10) { harness.handler.headDecisions > 0 }
        let done = DispatchSemaphore(value: 0)
        let finishedBeforeResponse = harness.handler.completed.isEmpty
        harness.server.shutdown(gracePeriod: 5) { done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success, "shutdown completed")
        XCTAssertTrue(finishedBeforeResponse)
        XCTAssertEqual(curl.wait(), 0)
        XCTAssertTrue(curl.output.hasPrefix("HTTP/1.1 200"), curl.output)
        XCTAssertTrue(curl.output.contains("Connection: close"), curl.output)
        XCTAssertTrue(curl.output.contains("/inflight?delay=2500"), curl.output)
        // No longer accepting.
        let after = try Curl.run([harness.url("/x")])
        XCTAssertEqual(after.status, 7, "connection refused after shutdown: \(after.output)")
    }
}
