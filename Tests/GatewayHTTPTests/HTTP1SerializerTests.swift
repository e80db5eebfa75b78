import GatewayIO
@testable import GatewayHTTP
import XCTest

/// The HTTP/1.1 head serializers (`HTTP1Serializer`, written through `HTTP1HeadWriter`), byte for
/// byte: what is dropped, what is added, the replaced response field, and heads far larger than
/// the writer's stack scratch.
final class HTTP1SerializerTests: XCTestCase {
    private static let group = EventLoopGroup(loopCount: 1, timerResolution: 1)
    private static let pool: UpstreamPool = {
        try! UpstreamPool(UpstreamConfiguration(name: "up", address: .tcp(host: "127.0.0.1", port: 9)), group: group)
    }()

    private func headers(_ pairs: [(String, String)]) -> HTTPHeaders {
        var h = HTTPHeaders()
        for (n, v) in pairs { try! h.add(name: n, value: v) }
        return h
    }

    private func proxied(_ head: HTTPResponseHead, body: DownstreamBody, keepAlive: Bool = true, http10: Bool = false,
                         replacing field: (name: String, value: String)? = nil) -> String {
        var out = Array("prefix|".utf8)
        HTTP1Serializer.appendProxiedHead(head, body: body, keepAlive: keepAlive, clientIsHTTP10: http10,
                                          replacing: field, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    func testProxiedHeadDropsHopByHopAndConnectionOptionsAndReframes() {
        let head = HTTPResponseHead(status: 200, reason: Array("Fine".utf8), headers: headers([
            ("Server", "up"), ("Connection", "keep-alive, X-Hop"), ("X-Hop", "secret"), ("Transfer-Encoding", "chunked"),
            ("Content-Length", "9"), ("Keep-Alive", "timeout=5"), ("Content-Type", "text/plain"),
        ]), framing: .chunked)
        XCTAssertEqual(proxied(head, body: .length(12)),
                       "prefix|HTTP/1.1 200 Fine\r\nServer: up\r\nContent-Type: text/plain\r\nContent-Length: 12\r\n\r\n")
        XCTAssertEqual(proxied(head, body: .chunked, keepAlive: false),
                       "prefix|HTTP/1.1 200 Fine\r\nServer: up\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(proxied(HTTPResponseHead(status: 304, headers: headers([("Content-Length", "40"), ("ETag", "\"e\"")])),
                               body: .none(passLength: true), http10: true),
                       "prefix|HTTP/1.1 304 Not Modified\r\nContent-Length: 40\r\nETag: \"e\"\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(proxied(HTTPResponseHead(status: 204, headers: headers([("Content-Length", "0")])), body: .none(passLength: false)),
                       "prefix|HTTP/1.1 204 No Content\r\n\r\n")
    }

    /// `HTTPForward.responseField`: every upstream copy (any case) goes, the field is written once,
    /// after the others; an invalid field is left out and the upstream's fields pass as they are
    /// (the rule HTTP/2 follows too).
    func testReplacedFieldIsSetOnce() {
        let head = HTTPResponseHead(status: 200, headers: headers([("X-Request-Id", "up-1"), ("A", "1"), ("x-request-id", "up-2")]))
        XCTAssertEqual(proxied(head, body: .length(0), replacing: ("X-Request-Id", "gw")),
                       "prefix|HTTP/1.1 200 OK\r\nA: 1\r\nX-Request-Id: gw\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(proxied(head, body: .length(0), replacing: ("X-Request-Id", "bad\r\nInjected: 1")),
                       "prefix|HTTP/1.1 200 OK\r\nX-Request-Id: up-1\r\nA: 1\r\nx-request-id: up-2\r\nContent-Length: 0\r\n\r\n")
        XCTAssertEqual(proxied(head, body: .length(0)),
                       "prefix|HTTP/1.1 200 OK\r\nX-Request-Id: up-1\r\nA: 1\r\nx-request-id: up-2\r\nContent-Length: 0\r\n\r\n")
    }

    /// A head of 200 KiB (beyond any stack scratch) is written whole.
    func testLargeHeads() {
        let big = String(repeating: "v", count: 8000)
        var pairs: [(String, String)] = []
        for i in 0..<25 { pairs.append(("X-Big-\(i)", big)) }
        let text = proxied(HTTPResponseHead(status: 599, reason: Array(String(repeating: "r", count: 3000).utf8),
                                            headers: headers(pairs)), body: .length(1), replacing: ("X-Id", big))
        XCTAssertTrue(text.hasPrefix("prefix|HTTP/1.1 599 rrr"))
        XCTAssertTrue(text.hasSuffix("X-Id: \(big)\r\nContent-Length: 1\r\n\r\n"))
        XCTAssertEqual(text.components(separatedBy: "X-Big-").count, 26)

        var forward = HTTPForward(upstream: Self.pool, method: HTTPMethod("PROPFIND")!, target: Array("/t".utf8),
                                  headers: headers(pairs), body: Array("xyz".utf8))
        forward.headers.appendTrusted(name: "X-Last", value: "1")
        var out: [UInt8] = []
        HTTP1Serializer.appendUpstreamRequest(forward, hostHeader: Array("up:80".utf8), into: &out)
        let request = String(decoding: out, as: UTF8.self)
        XCTAssertTrue(request.hasPrefix("PROPFIND /t HTTP/1.1\r\nX-Big-0: vvv"))
        XCTAssertTrue(request.hasSuffix("X-Last: 1\r\nHost: up:80\r\nContent-Length: 3\r\n\r\nxyz"))
    }

    func testUpstreamRequestLineHostAndLength() {
        let forward = HTTPForward(upstream: Self.pool, method: .post, target: Array("/a?b=c".utf8), headers: headers([
            ("Host", "client"), ("host", "second"), ("Connection", "X-Drop"), ("X-Drop", "1"), ("TE", "trailers"),
            ("Content-Length", "99"), ("Accept", "*/*"),
        ]))
        var out: [UInt8] = []
        HTTP1Serializer.appendUpstreamRequest(forward, hostHeader: Array("up".utf8), into: &out)
        XCTAssertEqual(String(decoding: out, as: UTF8.self),
                       "POST /a?b=c HTTP/1.1\r\nHost: client\r\nAccept: */*\r\nContent-Length: 0\r\n\r\n")
        let get = HTTPForward(upstream: Self.pool, method: .get, target: Array("/".utf8), headers: HTTPHeaders())
        out = []
        HTTP1Serializer.appendUpstreamRequest(get, hostHeader: Array("up:8080".utf8), into: &out)
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "GET / HTTP/1.1\r\nHost: up:8080\r\n\r\n")
    }
}
