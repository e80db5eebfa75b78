import XCTest
@testable import GatewayHTTP

final class HTTP1ResponseParserTests: XCTestCase {
    struct Parsed: Equatable {
        var status: Int?
        var reason: String?
        var headers: [String] = []
        var framing: HTTPBodyFraming?
        var keepAlive: Bool?
        var body: [UInt8] = []
        var ended = false
        var error: HTTPError?
    }

    /// Feeds `text` in pieces of `piece` bytes (0 = whole), then signals end of input when `eof`.
    private func parse(_ text: String, method: HTTPMethod = .get, piece: Int = 0, eof: Bool = false) -> Parsed {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: method)
        var out = Parsed()
        let bytes = Array(text.utf8)
        let size = piece == 0 ? max(1, bytes.count) : piece
        var start = 0
        outer: repeat {
            let chunk = Array(bytes[start..<min(bytes.count, start + size)])
            start += size
            var offset = 0
            while true {
                let step = chunk.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
                let base = offset
                offset += step.consumed
                switch step.event {
                case .needMoreData: continue outer
                case .head(let h):
                    out.status = h.status
                    out.reason = String(decoding: h.reason, as: UTF8.self)
                    out.headers = h.headers.map { "\($0.name): \($0.value)" }
                    out.framing = h.framing
                    out.keepAlive = h.keepAlive
                case .body(let r): out.body += chunk[(base + r.lowerBound)..<(base + r.upperBound)]
                case .end:
                    out.ended = true
                    if offset >= chunk.count { break outer }
                case .error(let e):
                    out.error = e
                    return out
                }
            }
        } while start < bytes.count
        if eof && !out.ended {
            switch parser.finish() {
            case .end: out.ended = true
            case .error(let e): out.error = e
            default: break
            }
        }
        return out
    }

    private func allWays(_ text: String, method: HTTPMethod = .get, eof: Bool = false,
                         file: StaticString = #filePath, line: UInt = #line) -> Parsed {
        let whole = parse(text, method: method, eof: eof)
        XCTAssertEqual(whole, parse(text, method: method, piece: 1, eof: eof), "byte by byte", file: file, line: line)
        XCTAssertEqual(whole, parse(text, method: method, piece: 5, eof: eof), "5-byte pieces", file: file, line: line)
        return whole
    }

    /// A bare CR anywhere in a field line is refused, its detail `bare_line_ending` (as for requests).
    func testBareCRAnywhereInAFieldLineIsRefusedAsABareLineEnding() {
        for (position, line) in ParserHarness.fieldLinesWithABareCR {
            let text = "HTTP/1.1 200 OK\r\n" + line + "\r\nContent-Length: 0\r\n\r\n"
            XCTAssertEqual(allWays(text).error, .upstreamBadResponse, "CR at \(position)")
            var parser = HTTP1ResponseParser()
            parser.expectResponse(to: .get)
            _ = Array(text.utf8).withUnsafeBytes { parser.parse($0) }
            XCTAssertEqual(parser.failureDetail, .bareLineEnding, "CR at \(position)")
        }
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        _ = Array("HTTP/1.1 200 OK\r\nX-Name\u{1}: v\r\n\r\n".utf8).withUnsafeBytes { parser.parse($0) }
        XCTAssertEqual(parser.failureDetail, .badHeader, "no CR: its own error")
    }

    func testContentLengthResponse() {
        let p = allWays("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello")
        XCTAssertEqual(p.status, 200)
        XCTAssertEqual(p.reason, "OK")
        XCTAssertEqual(p.body, Array("hello".utf8))
        XCTAssertTrue(p.ended)
        XCTAssertEqual(p.keepAlive, true)
        XCTAssertEqual(p.headers, ["Content-Length: 5", "X-A: b"])
    }

    func testChunkedResponseWithTrailers() {
        let p = allWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nX-T: 1\r\n\r\n")
        XCTAssertEqual(p.framing, .chunked)
        XCTAssertEqual(p.body, Array("abcde".utf8))
        XCTAssertTrue(p.ended)
    }

    func testInterimResponsesSkipped() {
        let p = allWays("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
                        + "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(p.status, 201)
        XCTAssertEqual(p.headers, ["Content-Length: 0"])
        XCTAssertTrue(p.ended)
    }

    func testSwitchingProtocolsIsAnError() {
        XCTAssertEqual(allWays("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n").error, .upstreamBadResponse)
    }

    func testNoBodyCases() {
        let head = allWays("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", method: .head)
        XCTAssertEqual(head.framing, HTTPBodyFraming.none)
        XCTAssertTrue(head.ended)
        XCTAssertTrue(allWays("HTTP/1.1 204 No Content\r\n\r\n").ended)
        XCTAssertTrue(allWays("HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n").ended)
    }

    func testCloseDelimited() {
        let p = allWays("HTTP/1.1 200 OK\r\n\r\nuntil the end", eof: true)
        XCTAssertEqual(p.framing, .untilClose)
        XCTAssertEqual(p.keepAlive, false)
        XCTAssertEqual(p.body, Array("until the end".utf8))
        XCTAssertTrue(p.ended)
    }

    /// RFC 9112 section 6.3 would frame `Transfer-Encoding: gzip` by close and `gzip, chunked` as
    /// chunked, but the proxy removes transfer codings on the way (hop-by-hop) and would hand the
    /// client gzip bytes as identity: refused (502), like nginx. Status codes outside 100-599 too.
    func testTransferCodingsOtherThanChunkedAndStatusesPast599AreRefused() {
        for bad in [
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nxx\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
            "HTTP/1.1 600 Nope\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 999 Nope\r\nContent-Length: 0\r\n\r\n",
        ] {
            XCTAssertEqual(allWays(bad, eof: true).error, .upstreamBadResponse, bad.debugDescription)
        }
        XCTAssertEqual(allWays("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n").framing, .chunked)
        XCTAssertEqual(allWays("HTTP/1.1 599 Edge\r\nContent-Length: 0\r\n\r\n").status, 599)
    }

    func testTruncatedResponsesAreResets() {
        XCTAssertEqual(allWays("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", eof: true).error, .upstreamReset)
        XCTAssertEqual(allWays("HTTP/1.1 200 OK\r\nContent-Le", eof: true).error, .upstreamReset)
        XCTAssertEqual(allWays("", eof: true).error, .upstreamReset)
    }

    func testKeepAliveRules() {
        XCTAssertEqual(allWays("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").keepAlive, false)
        XCTAssertEqual(allWays("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n").keepAlive, false)
        XCTAssertEqual(allWays("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n").keepAlive, true)
    }

    func testStrictness() {
        for bad in [
            "HTTP/1.1 200 OK\nContent-Length: 0\n\n",  // bare LF
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n",  // CL + TE
            "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\nx",  // duplicate CL
            "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n",  // bad CL
            "HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",  // obs-fold
            "HTTP/1.1 20 OK\r\n\r\n",  // status
            "HTTP/2.0 200 OK\r\n\r\n",  // version
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",  // chunk size
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n",  // chunk overrun
            "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",  // TE on 1.0
        ] {
            XCTAssertEqual(allWays(bad).error, .upstreamBadResponse, bad.debugDescription)
        }
    }

    func testStatusLineWithoutReason() {
        let p = allWays("HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(p.status, 200)
        XCTAssertEqual(p.reason, "")
    }

    func testUnsolicitedBytesAreAnError() {
        var parser = HTTP1ResponseParser()
        let bytes = Array("HTTP/1.1 200 OK\r\n\r\n".utf8)
        guard case .error(.upstreamBadResponse) = bytes.withUnsafeBytes({ parser.parse($0) }).event else {
            return XCTFail("bytes before any request must be refused")
        }
    }

    func testResponsesOnOneConnection() {
        var parser = HTTP1ResponseParser()
        let bytes = Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabHTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8)
        parser.expectResponse(to: .get)
        var offset = 0
        var statuses: [Int] = []
        var ends = 0
        parsing: while true {
            let step = bytes.withUnsafeBytes { parser.parse(UnsafeRawBufferPointer(rebasing: $0[offset...])) }
            offset += step.consumed
            switch step.event {
            case .needMoreData: break parsing
            case .head(let h): statuses.append(h.status)
            case .end:
                ends += 1
                parser.expectResponse(to: .get)
            case .error(let e): return XCTFail("\(e)")
            case .body: break
            }
        }
        XCTAssertEqual(statuses, [200, 404])
        XCTAssertEqual(ends, 2)
    }

    /// `isReadingBody` (what restarts the upstream's response timeout on each read): false through
    /// interim responses and the head, true from the final head to the end.
    func testIsReadingBodyFromTheFinalHeadToTheEnd() {
        var parser = HTTP1ResponseParser()
        parser.expectResponse(to: .get)
        func feed(_ text: String) -> HTTP1ResponseParser.Event {
            Array(text.utf8).withUnsafeBytes { parser.parse($0) }.event
        }
        _ = feed("HTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Le")
        XCTAssertFalse(parser.isReadingBody, "an interim response and half a head")
        guard case .head = feed("ngth: 4\r\n\r\n") else { return XCTFail("no head") }
        XCTAssertTrue(parser.isReadingBody)
        _ = feed("ab")
        XCTAssertTrue(parser.isReadingBody)
        _ = feed("cd")
        guard case .end = feed("") else { return XCTFail("no end") }  // reported by the next call
        XCTAssertFalse(parser.isReadingBody)
    }
}
