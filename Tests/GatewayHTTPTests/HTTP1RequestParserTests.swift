import XCTest
@testable import GatewayHTTP

final class HTTP1RequestParserTests: XCTestCase {
    private func expectError(_ text: String, _ error: HTTPError, limits: HTTP1ParserLimits = HTTP1ParserLimits(),
                             bodyLimit: Int = .max, file: StaticString = #filePath, line: UInt = #line) {
        let outcome = ParserHarness.parseAllWays(text, bodyLimit: bodyLimit, limits: limits, file: file, line: line)
        XCTAssertEqual(outcome.error, error, "input: \(text.debugDescription)", file: file, line: line)
        XCTAssertEqual(error.status, outcome.error?.status, file: file, line: line)
    }

    /// A bare CR anywhere in a field line is `bare_line_ending`, as it is in the request line, although
    /// field lines are no longer scanned for it before they are parsed (the name and value checks
    /// refuse it, and the refusal is then named for it).
    func testBareCRAnywhereInAFieldLineIsABareLineEnding() {
        for (_, line) in ParserHarness.fieldLinesWithABareCR {
            expectError("GET / HTTP/1.1\r\nHost: h\r\n" + line + "\r\n\r\n", .bareLineEnding)
        }
        expectError("GET / HTTP/1.1\r\nHost: h\r\n\r\r\n\r\n", .bareLineEnding)  // a line of one CR
        expectError("GET /\r HTTP/1.1\r\nHost: h\r\n\r\n", .bareLineEnding)  // the request line still scanned
        expectError("GET / HTTP/1.1\r\nHost: h\r\nX-Name\u{1}: v\r\n\r\n", .badHeader)  // no CR: its own error
    }

    /// A method with a lower-case letter is `400 method_invalid`: applications behind the gateway
    /// often fold the case (werkzeug, Django), so `post` would pass a POST-only route and run as POST.
    /// Upper-case extension methods (tokens with digits, `-`, `_` too) are still taken.
    func testMethodWithALowerCaseLetterIsRefused() {
        for method in ["post", "get", "Post", "GEt", "delete", "propfind", "x-custom", "M-SEARCh"] {
            expectError("\(method) / HTTP/1.1\r\nHost: h\r\n\r\n", .methodInvalid)
        }
        XCTAssertEqual(HTTPError.methodInvalid.status, 400)
        XCTAssertEqual(HTTPError.methodInvalid.code, "method_invalid")
        for method in ["GET", "POST", "PROPFIND", "M-SEARCH", "X_CUSTOM", "BREW2", "!#$%&'*+.^`|~"] {
            let o = ParserHarness.parseAllWays("\(method) / HTTP/1.1\r\nHost: h\r\n\r\n")
            XCTAssertNil(o.error, method)
            XCTAssertEqual(o.requests.first?.method, method)
        }
    }

    func testSimpleGet() {
        let o = ParserHarness.parseAllWays("GET /a/b?x=1&y=%2F HTTP/1.1\r\nHost: example.com\r\nX-Case: Value  \r\n\r\n")
        XCTAssertNil(o.error)
        XCTAssertFalse(o.incomplete)
        XCTAssertEqual(o.requests.count, 1)
        XCTAssertEqual(o.requests[0].method, "GET")
        XCTAssertEqual(o.requests[0].target, "/a/b?x=1&y=%2F")
        XCTAssertEqual(o.requests[0].headers, ["Host: example.com", "X-Case: Value"])
        XCTAssertEqual(o.requests[0].framing, .none)
        XCTAssertTrue(o.requests[0].keepAlive)
    }

    func testPathAndQueryExposed() {
        var parser = HTTP1RequestParser()
        let input = Array("GET /p/q?a=b?c HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        let step = input.withUnsafeBytes { parser.parse($0) }
        guard case .head(let head) = step.event else { return XCTFail("no head: \(step)") }
        XCTAssertEqual(head.pathString, "/p/q")
        XCTAssertEqual(head.queryString, "a=b?c")
        XCTAssertEqual(step.consumed, input.count)
        let noQuery = try? HTTPRequestHead(method: .get, target: "/x")
        XCTAssertNil(noQuery?.query)
    }

    func testContentLengthBody() {
        let o = ParserHarness.parseAllWays("POST /u HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\nhello world")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.requests.first?.body, Array("hello world".utf8))
        XCTAssertEqual(o.requests.first?.framing, .contentLength(11))
    }

    func testChunkedBodyWithExtensionsAndTrailers() {
        let text = "POST /u HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Trailer: t1\r\nApp-Attest-Extra: t2\r\n\r\n"
        let o = ParserHarness.parseAllWays(text)
        XCTAssertNil(o.error)
        XCTAssertEqual(o.requests.first.map { String(decoding: $0.body, as: UTF8.self) }, "hello world")
        XCTAssertEqual(o.requests.first?.trailers, ["X-Trailer: t1", "App-Attest-Extra: t2"])
        XCTAssertEqual(o.requests.first?.framing, .chunked)
    }

    func testChunkedUpperCaseHexAndTEcase() {
        let o = ParserHarness.parseAllWays("POST / HTTP/1.1\r\nHost: h\r\ntransfer-encoding: Chunked\r\n\r\nA\r\n0123456789\r\n0\r\n\r\n")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.requests.first?.body.count, 10)
    }

    func testPipelinedRequestsInOrder() {
        let text = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /2 HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nabc"
            + "GET /3 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
        let o = ParserHarness.parseAllWays(text)
        XCTAssertNil(o.error)
        XCTAssertEqual(o.requests.map(\.target), ["/1", "/2", "/3"])
        XCTAssertEqual(o.requests.map(\.keepAlive), [true, true, false])
        XCTAssertEqual(o.requests[1].body, Array("abc".utf8))
    }

    func testHTTP10KeepAliveSemantics() {
        let o = ParserHarness.parseAllWays("GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.requests.map(\.keepAlive), [false, true])
    }

    func testLeadingEmptyLinesIgnored() {
        let o = ParserHarness.parseAllWays("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
        XCTAssertNil(o.error)
        XCTAssertEqual(o.requests.count, 1)
    }

    func testIncompleteIsNotAnError() {
        let o = ParserHarness.parseAllWays("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        XCTAssertNil(o.error)
        XCTAssertTrue(o.incomplete)
        XCTAssertTrue(o.requests.isEmpty)
    }

    // MARK: framing attacks

    func testContentLengthAndTransferEncodingRefused() {
        expectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                    .contentLengthWithTransferEncoding)
        expectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                    .contentLengthWithTransferEncoding)
    }

    func testDuplicateContentLengthRefusedEvenWhenEqual() {
        expectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", .duplicateContentLength)
        expectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc", .duplicateContentLength)
        expectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\ncontent-length: 4\r\n\r\nabc", .duplicateContentLength)
    }

    func testBadContentLength() {
        for value in ["-1", "+3", "3a", "0x10", "", "1 2", "99999999999999999999999"] {
            expectError("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: \(value)\r\n\r\n", .badContentLength)
        }
    }

    func testTransferEncodingMustBeExactlyChunked() {
        for value in ["gzip", "gzip, chunked", "chunked, gzip", "chunked, chunked", "chunked,", "identity", "xchunked", "chunked;q=1"] {
            expectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \(value)\r\n\r\n", .badTransferEncoding)
        }
        expectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
                    .badTransferEncoding)
        expectError("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", .badTransferEncoding)
    }

    func testObsFoldRefused() {
        expectError("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n  folded\r\n\r\n", .obsoleteLineFolding)
        expectError("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n\tfolded\r\n\r\n", .obsoleteLineFolding)
    }

    func testWhitespaceBeforeColonRefused() {
        expectError("GET / HTTP/1.1\r\nHost: h\r\nContent-Length : 3\r\n\r\nabc", .badHeader)
        expectError("GET / HTTP/1.1\r\nHost: h\r\nX-A\t: a\r\n\r\n", .badHeader)
        expectError("GET / HTTP/1.1\r\nHost: h\r\n: novalue\r\n\r\n", .badHeader)
        expectError("GET / HTTP/1.1\r\nHost: h\r\nNoColon\r\n\r\n", .badHeader)
        expectError("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{01}b\r\n\r\n", .badHeader)
        expectError("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\u{7F}\r\n\r\n", .badHeader)
    }

    func testBareLineFeedsAndCarriageReturns() {
        expectError("GET / HTTP/1.1\nHost: h\r\n\r\n", .bareLineEnding)
        expectError("GET / HTTP/1.1\r\nHost: h\n\r\n", .bareLineEnding)
        expectError("GET / HTTP/1.1\r\nHost: h\r\n\n", .bareLineEnding)
        expectError("GET / HTTP/1.1\r\nHost: h\rX: y\r\n\r\n", .bareLineEnding)
        expectError("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n", .bareLineEnding)
        // Inside chunked framing.
        expectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n0\r\n\r\n", .bareLineEnding)
        expectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\n0\r\n\r\n", .bareLineEnding)
        expectError("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\n", .bareLineEnding)
    }

    func testChunkFramingErrors() {
        let prefix = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        expectError(prefix + "fffffffffffffffff\r\n", .badChunk)  // 17 hex digits: overflow
        expectError(prefix + "8000000000000000\r\n", .badChunk)  // > Int.max
        expectError(prefix + "x\r\n", .badChunk)
        expectError(prefix + " 3\r\nabc\r\n0\r\n\r\n", .badChunk)
        expectError(prefix + "3 x\r\nabc\r\n0\r\n\r\n", .badChunk)
        expectError(prefix + "3\r\nabcd\r\n0\r\n\r\n", .badChunk)  // data longer than declared
        expectError(prefix + "3;\u{01}\r\nabc\r\n0\r\n\r\n", .badChunk)
        expectError(prefix + "3;" + String(repeating: "e", count: 2000) + "\r\n", .badChunk)  // extension bound
        expectError(prefix + "0\r\nBad Trailer: x\r\n\r\n", .badTrailer)
        expectError(prefix + "0\r\nX: a\r\n folded\r\n\r\n", .obsoleteLineFolding)
    }

    func testChunkSizeOverflowDoesNotTrap() {
        // Exactly Int.max is accepted as a size and then refused by the body limit.
        let prefix = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        expectError(prefix + "7fffffffffffffff\r\nabc", .bodyTooLarge, bodyLimit: 1 << 20)
    }

    func testHeaderSectionLimits() {
        let limits = HTTP1ParserLimits(maxStartLineBytes: 64, maxHeaderBytes: 256, maxHeaderCount: 4)
        expectError("GET /" + String(repeating: "a", count: 100) + " HTTP/1.1\r\nHost: h\r\n\r\n",
                    .requestLineTooLong, limits: limits)
        expectError("GET / HTTP/1.1\r\nHost: h\r\nX: " + String(repeating: "v", count: 300) + "\r\n\r\n",
                    .headerTooLarge, limits: limits)
        expectError("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\nD: 4\r\n\r\n", .tooManyHeaders, limits: limits)
        XCTAssertEqual(HTTPError.headerTooLarge.status, 431)
        XCTAssertEqual(HTTPError.tooManyHeaders.status, 431)
        // Just inside the limits.
        let ok = ParserHarness.parseAllWays("GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n", limits: limits)
        XCTAssertNil(ok.error)
        XCTAssertEqual(ok.requests.count, 1)
        // Many header bytes split across pieces still count once.
        let big = HTTP1ParserLimits(maxHeaderBytes: 200)
        let header = "GET / HTTP/1.1\r\nHost: h\r\n"
        let exact = header + "X: " + String(repeating: "v", count: 200 - header.utf8.count - 7) + "\r\n\r\n"
        XCTAssertEqual(exact.utf8.count, 200)
        XCTAssertNil(ParserHarness.parseAllWays(exact, limits: big).error)
        XCTAssertEqual(ParserHarness.parseAllWays(exact.replacingOccurrences(of: "X: ", with: "X: v"), limits: big).error,
                       .headerTooLarge)
    }

    func testTrailerLimits() {
        let prefix = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
        expectError(prefix + "X: " + String(repeating: "t", count: 9000) + "\r\n\r\n", .headerTooLarge)
    }

    func testBodyLimitCountsDecodedBytes() {
        let chunked = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nabcd\r\n4\r\nefgh\r\n0\r\n\r\n"
        XCTAssertNil(ParserHarness.parseAllWays(chunked, bodyLimit: 8).error)
        expectError(chunked, .bodyTooLarge, bodyLimit: 7)
        let fixed = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 8\r\n\r\nabcdefgh"
        XCTAssertNil(ParserHarness.parseAllWays(fixed, bodyLimit: 8).error)
        expectError(fixed, .bodyTooLarge, bodyLimit: 7)
        XCTAssertEqual(HTTPError.bodyTooLarge.status, 413)
    }

    func testRequestLineErrors() {
        expectError("GET  / HTTP/1.1\r\nHost: h\r\n\r\n", .badRequestLine)
        expectError("GET / HTTP/1.1 \r\nHost: h\r\n\r\n", .badRequestLine)
        expectError("GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", .badRequestLine)
        expectError("G@T / HTTP/1.1\r\nHost: h\r\n\r\n", .badRequestLine)
        expectError("GET / http/1.1\r\nHost: h\r\n\r\n", .badRequestLine)
        expectError("GET / HTTP/1.10\r\nHost: h\r\n\r\n", .badRequestLine)
        expectError("GET /\r\n\r\n", .badRequestLine)
        expectError("GET / HTTP/2.0\r\nHost: h\r\n\r\n", .versionNotSupported)
        expectError("GET / HTTP/1.2\r\nHost: h\r\n\r\n", .versionNotSupported)
        XCTAssertEqual(HTTPError.versionNotSupported.status, 505)
    }

    func testHost() {
        expectError("GET / HTTP/1.1\r\n\r\n", .hostInvalid)
        expectError("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", .hostInvalid)
        expectError("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", .hostInvalid)
        expectError("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", .hostInvalid)
        XCTAssertNil(ParserHarness.parseAllWays("GET / HTTP/1.0\r\n\r\n").error)
        XCTAssertEqual(HTTPError.hostInvalid.status, 400)
        XCTAssertEqual(HTTPError.hostInvalid.code, "host_invalid")
    }

    /// RFC 9112 section 3.2, RFC 9110 section 7.2: the value is `uri-host [ ":" port ]`.
    func testHostValues() {
        for good in ["example.com", "example.com:8080", "a", "A-b_c~d.e", "127.0.0.1", "127.0.0.1:0", "h:65535", "h:00080",
                     "[::1]", "[::1]:443", "[::]", "[2001:db8::7]", "[2001:0db8:0000:0000:0000:ff00:0042:8329]",
                     "[::ffff:192.0.2.1]:80", "[1:2:3:4:5:6:7::]", "[::2:3:4:5:6:7:8]", "[1:2:3:4:5:6:1.2.3.4]",
                     "[v1.fe80::a+en1]", "ex%41mple.com", "xn--bcher-kva.example", "a!$&'()*+,;=b", "999.999.999.999"] {
            XCTAssertNil(ParserHarness.parseAllWays("GET / HTTP/1.1\r\nHost: \(good)\r\n\r\n").error, good)
            XCTAssertTrue(HTTPHostSyntax.isValidHostField(good), good)
        }
        for bad in ["", "a b", "a/b", "a\\b", "a@b", "user@h", "a:b", "h:", ":80", "h:65536", "h:123456", "h:-1", "h:8 0",
                    "a?b", "a#b", "a%4", "a%zz", "\"q\"", "[::1", "::1", "[::1]x", "[::1]:", "[::1]:99999", "[]", "[:1]", "[1:]",
                    "[1::2::3]", "[1:2:3:4:5:6:7:8:9]", "[1:2:3:4:5:6:7]", "[12345::]", "[::g]", "[fe80::1%25eth0]",
                    "[::1.2.3]", "[::1.2.3.256]", "[::01.2.3.4]", "[1.2.3.4]", "[1:2:3:4:5:6:7:1.2.3.4]", "[v.x]", "[v1.]", "[vx.a]",
                    "h\u{e9}.example", "a,b c"] {
            XCTAssertFalse(HTTPHostSyntax.isValidHostField(bad), bad)
            if !bad.isEmpty {
                expectError("GET / HTTP/1.1\r\nHost: \(bad)\r\n\r\n", .hostInvalid)
            }
        }
        // Empty: refused on both versions (an http URI never has an empty host); absent is fine on 1.0.
        expectError("GET / HTTP/1.1\r\nHost:\r\n\r\n", .hostInvalid)
        expectError("GET / HTTP/1.1\r\nHost:   \r\n\r\n", .hostInvalid)
        expectError("GET / HTTP/1.0\r\nHost: \r\n\r\n", .hostInvalid)
        expectError("GET / HTTP/1.0\r\nHost: a b\r\n\r\n", .hostInvalid)
        XCTAssertNil(ParserHarness.parseAllWays("GET / HTTP/1.0\r\nHost: h:81\r\n\r\n").error)
    }

    func testExpect() {
        var parser = HTTP1RequestParser()
        let input = Array("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 2\r\n\r\n".utf8)
        let step = input.withUnsafeBytes { parser.parse($0) }
        guard case .head(let head) = step.event else { return XCTFail("no head") }
        XCTAssertTrue(head.expectsContinue)
        expectError("POST / HTTP/1.1\r\nHost: h\r\nExpect: something\r\n\r\n", .expectationFailed)
        XCTAssertEqual(HTTPError.expectationFailed.status, 417)
    }

    func testErrorIsSticky() {
        var parser = HTTP1RequestParser()
        let bad = Array("GET / HTTP/1.1\nHost: h\r\n\r\n".utf8)
        XCTAssertEqual(bad.withUnsafeBytes { parser.parse($0) }.event, .error(.bareLineEnding))
        let good = Array("GET / HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        XCTAssertEqual(good.withUnsafeBytes { parser.parse($0) }.event, .error(.bareLineEnding))
    }

    func testTargetNotInNormalFormRefusedByParser() {
        expectError("GET //a HTTP/1.1\r\nHost: h\r\n\r\n", .targetEmptySegment)
        expectError("GET /a/../b HTTP/1.1\r\nHost: h\r\n\r\n", .targetDotSegment)
        expectError("GET /a%2Fb HTTP/1.1\r\nHost: h\r\n\r\n", .targetEncodedSeparator)
        expectError("GET http://h/a HTTP/1.1\r\nHost: h\r\n\r\n", .targetNotOriginForm)
        expectError("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n", .targetNotOriginForm)
        expectError("CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n", .targetNotOriginForm)
    }
}
