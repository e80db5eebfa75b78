import CNghttp2
@testable import GatewayHTTP
import GatewayIO
import XCTest

/// `HTTP2Session` without sockets: a client nghttp2 session (or crafted frames) on one side, a
/// recording delegate on the other, the clock injected.
final class HTTP2SessionTests: XCTestCase {
    private let get: [(String, String)] = [(":method", "GET"), (":scheme", "http"), (":path", "/a"), (":authority", "ex.test")]

    private typealias Client = HTTP2TestClient

    // MARK: request heads (RFC 9113 section 8.3)

    func testRequestHeadIsBuiltLikeHTTP1() throws {
        let p = try HTTP2SessionPair()
        let id = p.client.request([(":method", "POST"), (":scheme", "https"), (":path", "/api/items?b=2&a=%2F"),
                                   (":authority", "ex.test:8443"), ("cookie", "a=1"), ("x-keep", "Yes"), ("cookie", "b=2"),
                                   ("content-length", "5"), ("te", "trailers")], body: Array("hello".utf8))
        p.pump()
        let head = try XCTUnwrap(p.delegate.heads[id])
        XCTAssertEqual(head.method, .post)
        XCTAssertEqual(head.targetString, "/api/items?b=2&a=%2F")
        XCTAssertEqual(head.pathString, "/api/items")
        XCTAssertEqual(head.queryString, "b=2&a=%2F")
        XCTAssertEqual(head.version, .http2)
        XCTAssertEqual(head.framing, .contentLength(5))
        XCTAssertFalse(head.expectsContinue)
        XCTAssertEqual(head.headers.values("host"), ["ex.test:8443"], "Host added from :authority")
        XCTAssertEqual(head.headers.values("cookie"), ["a=1; b=2"], "cookie fields joined (RFC 9113 section 8.2.3)")
        XCTAssertEqual(head.headers.first("x-keep"), "Yes")
        XCTAssertFalse(head.headers.contains { $0.name.hasPrefix(":") }, "no pseudo-header among the fields")
        XCTAssertEqual(p.delegate.bodies[id], Array("hello".utf8))
        XCTAssertEqual(p.delegate.events, ["opened \(id)", "ended \(id)"])
        XCTAssertEqual(p.delegate.trailers[id]?.count, 0)
    }

    func testFramingFromEndStreamAndContentLength() throws {
        let p = try HTTP2SessionPair()
        let noBody = p.client.request(get)
        let unknownLength = p.client.request(get.map { $0.0 == ":path" ? (":path", "/b") : $0 }, body: Array("xy".utf8))
        let expect = p.client.request(get + [("expect", "100-continue")], body: Array("z".utf8))
        p.pump()
        XCTAssertEqual(p.delegate.heads[noBody]?.framing, HTTPBodyFraming.none)
        XCTAssertEqual(p.delegate.heads[unknownLength]?.framing, .chunked, "DATA without content-length: length unknown")
        XCTAssertEqual(p.delegate.heads[expect]?.expectsContinue, true)
        XCTAssertEqual(p.delegate.bodies[unknownLength], Array("xy".utf8))
    }

    func testHostMustAgreeWithAuthority() throws {
        let p = try HTTP2SessionPair()
        let same = p.client.request(get + [("host", "EX.test")])
        let differs = p.client.request(get + [("host", "other.test")])
        let userinfo = p.client.request([(":method", "GET"), (":scheme", "http"), (":path", "/a"), (":authority", "u@ex.test")])
        p.pump()
        XCTAssertEqual(p.delegate.heads[same]?.headers.values("host"), ["EX.test"], "the client's Host kept when it agrees")
        XCTAssertTrue(p.delegate.events.contains("malformed \(differs)"))
        XCTAssertEqual(p.client.responses[differs]?.reset, NGHTTP2_PROTOCOL_ERROR.rawValue)
        XCTAssertEqual(p.client.responses[userinfo]?.reset, NGHTTP2_PROTOCOL_ERROR.rawValue)
        XCTAssertNil(p.delegate.heads[differs])
    }

    func testRefusedRequestsAreReportedWithTheHTTP1Error() throws {
        let p = try HTTP2SessionPair()
        let dot = p.client.request([(":method", "GET"), (":scheme", "http"), (":path", "/a/./b"), (":authority", "h")])
        let connect = p.client.request([(":method", "CONNECT"), (":authority", "ex.test:443")])
        let expect = p.client.request(get + [("expect", "nothing")])
        p.pump()
        XCTAssertEqual(p.delegate.refused[dot], .targetDotSegment)
        XCTAssertEqual(p.delegate.refused[connect], .targetNotOriginForm)
        XCTAssertEqual(p.delegate.refused[expect], .expectationFailed)
        XCTAssertTrue(p.delegate.heads.isEmpty)
    }

    func testTrailersEndTheRequest() throws {
        let p = try HTTP2SessionPair()
        // HEADERS, DATA, trailer HEADERS with END_STREAM, crafted (RFC 9113 section 8.1).
        let trailer = Client.literal("x-checksum", "abc")
        p.send(Client.preface + Client.frame(type: 4) + Client.frame(type: 1, flags: 0x4, stream: 1, Client.minimalRequestBlock)
               + Client.frame(type: 0, stream: 1, Array("body".utf8)) + Client.frame(type: 1, flags: 0x5, stream: 1, trailer))
        XCTAssertEqual(p.delegate.events, ["opened 1", "ended 1"])
        XCTAssertEqual(p.delegate.trailers[1]?.first("x-checksum"), "abc")
        XCTAssertEqual(p.delegate.bodies[1], Array("body".utf8))
        XCTAssertEqual(p.delegate.heads[1]?.headers.first("host"), "h")
    }

    // MARK: responses

    func testResponseHeadDropsConnectionSpecificFieldsAndBodyDefers() throws {
        let p = try HTTP2SessionPair()
        p.delegate.onOpened = { id, _ in
            p.delegate.respond(id, headers: [("Connection", "close, X-Hop"), ("X-Hop", "1"), ("Keep-Alive", "5"),
                                             ("Transfer-Encoding", "chunked"), ("Upgrade", "h2c"), ("Proxy-Connection", "x"),
                                             ("Content-Length", "999"), ("X-End-To-End", " passes "), ("Date", "then")],
                               body: Array("first ".utf8), complete: false)
        }
        let id = p.client.request(get)
        p.pump()
        var response = try XCTUnwrap(p.client.responses[id])
        XCTAssertEqual(response.status, 200)
        XCTAssertEqual(response.headers.map(\.0), ["x-end-to-end", "date"], "lower-cased, hop-by-hop dropped")
        XCTAssertEqual(response.headers.first?.1, "passes", "values trimmed")
        XCTAssertEqual(response.body, Array("first ".utf8))
        XCTAssertFalse(response.ended, "the body source has nothing yet: deferred")
        p.delegate.pendingBody[id]! += Array("second".utf8)
        p.delegate.bodyComplete[id] = true
        p.server.resumeData(id)
        p.pump()
        response = try XCTUnwrap(p.client.responses[id])
        XCTAssertEqual(String(decoding: response.body, as: UTF8.self), "first second")
        XCTAssertTrue(response.ended)
        XCTAssertEqual(p.delegate.closed[id], .noError)
    }

    func testResponseFieldReplacesItsNameAndIsSentNeverIndexed() throws {
        let p = try HTTP2SessionPair()
        let ids = (0..<5).map { _ in p.client.request(get) }
        p.pump()
        var upstream = HTTPHeaders()
        try upstream.add(name: "X-Request-Id", value: "from-upstream")
        try upstream.add(name: "Server", value: "up")
        try upstream.add(name: "Connection", value: "x-named")
        // Sent from the fields' own storage (not copied): the value's span, trimmed of OWS.
        try upstream.add(name: "X-Padded", value: " \tpadded value\t ")
        let fields: [(name: String, value: String)?] = [
            ("X-Request-Id", " id-1 "),  // replaces the upstream's, trimmed, never indexed
            ("X-Request-Id", "bad\r\nvalue"),  // invalid: left out, the upstream's stays
            ("Keep-Alive", "5"),  // connection-specific: never sent
            ("X-Named", "1"),  // named by the head's Connection field: dropped like the head's own fields
            nil,  // no field: the head as it is, indexed as usual
        ]
        for (id, field) in zip(ids, fields) {
            XCTAssertTrue(p.server.submitResponse(streamID: id, status: 200, headers: upstream, contentLength: 0, date: nil,
                                                  hasBody: false, field: field))
        }
        p.pump()
        let responses = try ids.map { try XCTUnwrap(p.client.responses[$0]) }
        XCTAssertEqual(responses[0].headers.map { "\($0.0)=\($0.1)" },
                       ["server=up", "x-padded=padded value", "content-length=0", "x-request-id=id-1"])
        XCTAssertEqual(responses[0].neverIndexed, ["x-request-id"])
        let unchanged = ["x-request-id=from-upstream", "server=up", "x-padded=padded value", "content-length=0"]
        for r in responses.dropFirst() {
            XCTAssertEqual(r.headers.map { "\($0.0)=\($0.1)" }, unchanged)
            XCTAssertEqual(r.neverIndexed, [], "fields of the head are indexed as nghttp2 decides")
            XCTAssertTrue(r.ended)
        }
    }

    func testEarlyResponseResetsTheRequestWithNoError() throws {
        let p = try HTTP2SessionPair()
        p.delegate.onOpened = { id, _ in p.delegate.respond(id, status: 413, body: Array("too big".utf8)) }
        let id = p.client.requestWithOpenBody(get + [("content-length", "100000")])  // the body is still coming
        p.pump()
        let response = try XCTUnwrap(p.client.responses[id])
        XCTAssertEqual(response.status, 413)
        XCTAssertEqual(response.body, Array("too big".utf8))
        XCTAssertTrue(response.ended)
        XCTAssertEqual(response.reset, NGHTTP2_NO_ERROR.rawValue, "RST_STREAM NO_ERROR after the complete response (RFC 9113 section 8.1)")
        XCTAssertEqual(p.delegate.closed[id], .noError)
    }

    func testContinueInterim() throws {
        let p = try HTTP2SessionPair()
        p.delegate.onOpened = { id, head in if head.expectsContinue { p.server.submitContinue(streamID: id) } }
        let id = p.client.requestWithOpenBody(get + [("expect", "100-continue"), ("content-length", "10")])
        p.pump()
        XCTAssertEqual(p.client.responses[id]?.interim, [100])
        XCTAssertNil(p.client.responses[id]?.status, "no final response yet")
    }

    func testContentLengthMismatchResetsTheStream() throws {
        let p = try HTTP2SessionPair()
        let short = p.client.request(get + [("content-length", "10")], body: Array("short".utf8))
        let long = p.client.request(get + [("content-length", "2")], body: Array("longer".utf8))
        let exact = p.client.request(get + [("content-length", "5")], body: Array("exact".utf8))
        p.pump()
        XCTAssertEqual(p.client.responses[short]?.reset, NGHTTP2_PROTOCOL_ERROR.rawValue, "5 bytes against content-length 10")
        XCTAssertEqual(p.client.responses[long]?.reset, NGHTTP2_PROTOCOL_ERROR.rawValue, "6 bytes against content-length 2")
        XCTAssertNil(p.client.responses[exact]?.reset)
        XCTAssertFalse(p.delegate.events.contains("ended \(short)"), "never handed over as complete")
        XCTAssertFalse(p.delegate.events.contains("ended \(long)"))
        XCTAssertTrue(p.delegate.events.contains("ended \(exact)"))
        XCTAssertEqual(p.delegate.closed[short], .protocolError)
        XCTAssertEqual(p.delegate.closed[long], .protocolError)
    }

    func testGracefulShutdownThenFinalGoaway() throws {
        let p = try HTTP2SessionPair()
        p.send(Client.preface + Client.frame(type: 4) + Client.frame(type: 1, flags: 0x5, stream: 1, Client.minimalRequestBlock))
        _ = p.serverFrames()
        p.server.submitGoaway(graceful: true)
        let notice = p.serverFrames().filter { $0.type == 7 }
        XCTAssertEqual(notice.map(\.lastStreamID), [Int32.max], "the shutdown notice")
        XCTAssertEqual(notice.first?.code, 0)
        // A stream opened after the notice (in flight) is still served.
        p.send(Client.frame(type: 1, flags: 0x5, stream: 3, Client.minimalRequestBlock))
        XCTAssertEqual(p.delegate.events, ["opened 1", "ended 1", "opened 3", "ended 3"])
        p.server.submitGoaway(graceful: false)
        let final = p.serverFrames().filter { $0.type == 7 }
        XCTAssertEqual(final.map(\.lastStreamID), [3])
        XCTAssertEqual(final.first?.code, 0)
        // Later streams are ignored.
        p.send(Client.frame(type: 1, flags: 0x5, stream: 5, Client.minimalRequestBlock))
        XCTAssertFalse(p.delegate.events.contains("opened 5"))
        XCTAssertFalse(p.server.isFinished, "two streams still active")
        p.delegate.respond(1)
        p.delegate.respond(3)
        _ = p.serverFrames()
        XCTAssertTrue(p.server.isFinished, "nothing left to read or write once they completed")
    }

    func testRequestBodiesStillArrivingStayWithinTheBudget() throws {
        var settings = HTTP2Settings()
        settings.requestBodyBufferBytes = 65536
        let p = try HTTP2SessionPair(settings: settings)
        let body = (0..<300_000).map { UInt8(truncatingIfNeeded: $0) }
        var secondAtFirstEnd: Int?
        let first = p.client.request(get + [("content-length", "300000")], body: body)
        let second = p.client.request(get.map { $0.0 == ":path" ? (":path", "/b") : $0 } + [("content-length", "300000")], body: body)
        p.delegate.onEnded = { id in if id == first { secondAtFirstEnd = p.delegate.bodies[second]?.count ?? 0 } }
        p.pump()
        XCTAssertEqual(p.delegate.bodies[first], body, "the oldest stream always gets its window back")
        // The first body, complete, is still held (with the handler, or not yet written upstream):
        // it stays in the budget, and the second waits at its window.
        XCTAssertEqual(p.server.heldRequestBodyBytes, 300_000 + (p.delegate.bodies[second]?.count ?? 0))
        XCTAssertFalse(p.delegate.events.contains("ended \(second)"), "held back while the first body is held")
        XCTAssertLessThanOrEqual(p.delegate.bodies[second]?.count ?? 0, 65536 + 65535)
        XCTAssertTrue(p.server.releaseRequestBody(first))
        XCTAssertFalse(p.server.releaseRequestBody(first), "released once")
        p.pump()
        XCTAssertEqual(p.delegate.bodies[second], body, "the other one continues once the first is no longer held")
        XCTAssertTrue(p.delegate.events.contains("ended \(second)"))
        // Without the budget both bodies arrive interleaved (all 300000 bytes of the second by then,
        // measured); with it the second waits at its window.
        XCTAssertLessThanOrEqual(try XCTUnwrap(secondAtFirstEnd), 65536 + 65535, "held back at its window")
        XCTAssertNil(p.server.terminatedWith)
    }

    // MARK: abuse budgets (RFC 9113 section 10.5)

    func testRapidResetBudget() throws {
        var settings = HTTP2Settings()
        settings.resetWindowStreams = 20
        settings.maxResetsInWindow = 10
        let p = try HTTP2SessionPair(settings: settings)
        for i in 0..<10 {
            let id = p.client.request(get)
            p.pump()
            p.client.reset(id)
            p.pump()
            XCTAssertEqual(p.delegate.events.last, "closed \(id) CANCEL", "\(i)")
        }
        XCTAssertNil(p.server.terminatedWith, "10 resets in 10 streams: at the budget")
        // Well-behaved streams slide the window: 20 more completed streams, then 10 resets again.
        p.delegate.onOpened = { id, _ in p.delegate.respond(id) }
        for _ in 0..<20 { p.client.request(get); p.pump() }
        p.delegate.onOpened = nil
        for _ in 0..<10 {
            let id = p.client.request(get)
            p.pump()
            p.client.reset(id)
            p.pump()
        }
        XCTAssertNil(p.server.terminatedWith, "older resets left the window")
        let id = p.client.request(get)
        p.pump()
        p.client.reset(id)
        p.pump()
        XCTAssertEqual(p.server.terminatedWith, .enhanceYourCalm, "the 11th reset within the last 20 streams")
        XCTAssertEqual(p.client.goaways.last?.error, NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        XCTAssertTrue(p.server.isFinished)
    }

    func testContinuationBudget() throws {
        // Eight CONTINUATION frames are allowed (HEADERS + 8, the last with END_HEADERS)...
        let ok = try HTTP2SessionPair()
        var bytes = Client.preface + Client.frame(type: 4) + Client.frame(type: 1, flags: 0x1, stream: 1, Client.minimalRequestBlock)
        for i in 0..<8 { bytes += Client.frame(type: 9, flags: i == 7 ? 0x4 : 0, stream: 1, Client.literal("x-c\(i)", "v")) }
        ok.send(bytes)
        XCTAssertNil(ok.server.terminatedWith)
        XCTAssertEqual(ok.delegate.heads[1]?.headers.first("x-c7"), "v")
        // ...a ninth ends the connection.
        let flood = try HTTP2SessionPair()
        bytes = Client.preface + Client.frame(type: 4) + Client.frame(type: 1, flags: 0x1, stream: 1, Client.minimalRequestBlock)
        for i in 0..<9 { bytes += Client.frame(type: 9, stream: 1, Client.literal("x-c\(i)", "v")) }
        flood.send(bytes)
        XCTAssertEqual(flood.server.terminatedWith, .enhanceYourCalm)
        XCTAssertFalse(flood.serverAlive)
        flood.deliverServerOutput()
        XCTAssertEqual(flood.client.goaways.last?.error, NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
        XCTAssertTrue(flood.delegate.heads.isEmpty)
        // Few but large frames: the encoded block is bounded too (twice the header list size plus a
        // frame), even while no field is complete (one 60000-byte value spread over the frames).
        var limits = HTTP1ParserLimits()
        limits.maxHeaderBytes = 4096
        let large = try HTTP2SessionPair(limits: limits)
        bytes = Client.preface + Client.frame(type: 4) + Client.frame(type: 1, flags: 0x1, stream: 1, Client.minimalRequestBlock)
        let field = Client.indexedLiteral("x-large", valueLength: 60000)
        large.send(bytes + Client.frame(type: 9, stream: 1, Array(field[0..<16000])))
        XCTAssertNil(large.server.terminatedWith, "16 KB of block so far")
        large.send(Client.frame(type: 9, stream: 1, Array(field[16000..<32000])))
        XCTAssertEqual(large.server.terminatedWith, .enhanceYourCalm, "32 KB of block: over 2 x 4096 + 16384")
        XCTAssertTrue(large.delegate.events.isEmpty)
    }

    func testHeaderListSizeAndHPACKBomb() throws {
        var limits = HTTP1ParserLimits()
        limits.maxHeaderBytes = 8192
        // Over the list size: 431 on the stream (decoded sizes: name + value + 32 per field).
        let p = try HTTP2SessionPair(limits: limits)
        let big = p.client.request(get + (0..<10).map { ("x-f\($0)", String(repeating: "v", count: 800)) })
        let fine = p.client.request(get + [("x-small", "1")])
        p.pump()
        XCTAssertEqual(p.delegate.refused[big], .headerTooLarge)
        XCTAssertNotNil(p.delegate.heads[fine])
        XCTAssertNil(p.server.terminatedWith)
        // An HPACK bomb: one 4000-byte field in the dynamic table, then referenced (1 byte each).
        let bomb = try HTTP2SessionPair(limits: limits)
        var block = Client.minimalRequestBlock + Client.indexedLiteral("x-bomb", valueLength: 4000)
        block += Array(repeating: 0xBE, count: 50)  // indexed field 62: the newest dynamic entry
        bomb.send(Client.preface + Client.frame(type: 4) + Client.frame(type: 1, flags: 0x5, stream: 1, block))
        XCTAssertLessThan(block.count, 4100)
        XCTAssertEqual(bomb.server.terminatedWith, .enhanceYourCalm, "decoded size past the hard bound")
        XCTAssertTrue(bomb.delegate.heads.isEmpty)
        // A dynamic table size update above our SETTINGS_HEADER_TABLE_SIZE (4096): COMPRESSION_ERROR.
        let update = try HTTP2SessionPair()
        update.send(Client.preface + Client.frame(type: 4)
                    + Client.frame(type: 1, flags: 0x5, stream: 1, [0x3F, 0xE1, 0x7F] + Client.minimalRequestBlock))  // size 16384
        let goaway = update.serverFrames().filter { $0.type == 7 }
        XCTAssertEqual(goaway.map(\.code), [NGHTTP2_COMPRESSION_ERROR.rawValue])
        XCTAssertEqual(update.server.terminatedWith, .compressionError)
        XCTAssertTrue(update.server.isFinished)
    }

    func testControlFrameBudgetPerWindow() throws {
        var settings = HTTP2Settings()
        settings.maxControlFramesPerWindow = 10
        settings.controlFrameWindow = 1
        let p = try HTTP2SessionPair(settings: settings)
        p.pump()  // prefaces and SETTINGS (each side's SETTINGS counts once)
        for _ in 0..<9 { p.client.ping() }
        p.pump()
        XCTAssertNil(p.server.terminatedWith)
        XCTAssertEqual(p.client.pingAcks, 9)
        p.now += 1_000_000_000  // a new window
        for _ in 0..<10 { p.client.ping() }
        p.pump()
        XCTAssertNil(p.server.terminatedWith, "10 in the new window")
        p.client.ping()
        p.pump()
        XCTAssertEqual(p.server.terminatedWith, .enhanceYourCalm, "the 11th within one window")
        XCTAssertEqual(p.client.goaways.last?.error, NGHTTP2_ENHANCE_YOUR_CALM.rawValue)
    }

    func testWindowUpdateBudgetFollowsTheDataFramesSent() throws {
        // No stream, no DATA sent: 5 WINDOW_UPDATE frames are allowed, the 6th ends the connection.
        let update = Client.frame(type: 8, stream: 0, [0, 0, 0, 1])
        let p = try HTTP2SessionPair()
        p.send(Client.preface + Client.frame(type: 4) + Array([[UInt8]](repeating: update, count: 5).joined()))
        XCTAssertNil(p.server.terminatedWith)
        p.send(update)
        XCTAssertEqual(p.server.terminatedWith, .enhanceYourCalm)
        // Extension and unknown frame types count against the control-frame window.
        var settings = HTTP2Settings()
        settings.maxControlFramesPerWindow = 10
        let q = try HTTP2SessionPair(settings: settings)
        q.send(Client.preface + Client.frame(type: 4))  // SETTINGS: 1
        q.send(Array([[UInt8]](repeating: Client.frame(type: 0xFA, stream: 0, [1, 2, 3]), count: 8).joined()))
        q.send(Client.frame(type: 0x10, stream: 0, [0, 0, 0, 1, 0x75, 0x3D, 0x31]))  // PRIORITY_UPDATE u=1: 10
        XCTAssertNil(q.server.terminatedWith)
        q.send(Client.frame(type: 0x0C, stream: 0))  // ORIGIN: 11
        XCTAssertEqual(q.server.terminatedWith, .enhanceYourCalm)
    }

    func testEmptyDataFrameBudget() throws {
        var settings = HTTP2Settings()
        settings.maxEmptyDataFrames = 5
        let p = try HTTP2SessionPair(settings: settings)
        var bytes = Client.preface + Client.frame(type: 4) + Client.frame(type: 1, flags: 0x4, stream: 1, Client.minimalRequestBlock)
        for _ in 0..<5 { bytes += Client.frame(type: 0, stream: 1) }
        p.send(bytes)
        XCTAssertNil(p.server.terminatedWith)
        p.send(Client.frame(type: 0, stream: 1))
        XCTAssertEqual(p.server.terminatedWith, .enhanceYourCalm)
        // An empty DATA frame that ends the stream is normal and not counted.
        let q = try HTTP2SessionPair(settings: settings)
        bytes = Client.preface + Client.frame(type: 4)
        for i in 0..<10 {
            let id = Int32(1 + 2 * i)
            bytes += Client.frame(type: 1, flags: 0x4, stream: id, Client.minimalRequestBlock) + Client.frame(type: 0, flags: 0x1, stream: id)
        }
        q.send(bytes)
        XCTAssertNil(q.server.terminatedWith)
        XCTAssertEqual(q.delegate.events.filter { $0.hasPrefix("ended") }.count, 10)
    }

    func testBadPrefaceIsAConnectionError() throws {
        let p = try HTTP2SessionPair()
        p.send(Array("PRI * HTTP/2.0\r\n\r\nXX\r\n\r\n".utf8))
        XCTAssertEqual(p.server.terminatedWith, .protocolError)
        XCTAssertFalse(p.serverAlive)
    }

    func testSettingsAdvertised() throws {
        var settings = HTTP2Settings()
        settings.maxConcurrentStreams = 7
        settings.initialWindowSize = 1 << 20
        settings.maxFrameSize = 32768
        var limits = HTTP1ParserLimits()
        limits.maxHeaderBytes = 12345
        let p = try HTTP2SessionPair(settings: settings, limits: limits)
        var out = OutputBuffer()
        _ = p.server.produceOutput(into: &out, limit: 1 << 20)
        let bytes = out.withBytes { $0 }
        // The first frame is our SETTINGS (RFC 9113 section 3.4): 6 bytes per entry.
        XCTAssertEqual(bytes[3], 4)
        let length = Int(bytes[0]) << 16 | Int(bytes[1]) << 8 | Int(bytes[2])
        var entries: [Int: Int] = [:]
        for i in stride(from: 9, to: 9 + length, by: 6) {
            let id = Int(bytes[i]) << 8 | Int(bytes[i + 1])
            entries[id] = Int(bytes[i + 2]) << 24 | Int(bytes[i + 3]) << 16 | Int(bytes[i + 4]) << 8 | Int(bytes[i + 5])
        }
        XCTAssertEqual(entries[0x3], 7, "SETTINGS_MAX_CONCURRENT_STREAMS")
        // 1 MiB configured, advertised as the share of the 4 MiB body budget per stream (7 streams);
        // uploads are raised to 1 MiB by WINDOW_UPDATE while the budget has room.
        XCTAssertEqual(entries[0x4], (4 << 20) / 7, "SETTINGS_INITIAL_WINDOW_SIZE")
        XCTAssertEqual(settings.advertisedWindow, (4 << 20) / 7)
        XCTAssertEqual(entries[0x5], 32768, "SETTINGS_MAX_FRAME_SIZE")
        XCTAssertEqual(entries[0x6], 12345, "SETTINGS_MAX_HEADER_LIST_SIZE: the HTTP/1.1 header limit by default")
        XCTAssertEqual(entries[0x9], 1, "SETTINGS_NO_RFC7540_PRIORITIES")
        XCTAssertNil(entries[0x2], "SETTINGS_ENABLE_PUSH is not sent by a server")
    }

    func testPrefaceSniffing() {
        func match(_ s: String) -> HTTP2Preface.Match {
            Array(s.utf8).withUnsafeBytes { HTTP2Preface.match($0) }
        }
        XCTAssertEqual(match("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), .complete)
        XCTAssertEqual(match("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\u{4}"), .complete)
        XCTAssertEqual(match("PRI * HT"), .partial)
        XCTAssertEqual(match("P"), .partial)
        XCTAssertEqual(match("POST / HTTP/1.1"), .mismatch)
        XCTAssertEqual(match("PRI / HTTP/1.1"), .mismatch)
        XCTAssertEqual(match("GET / HTTP/1.1"), .mismatch)
    }
}
