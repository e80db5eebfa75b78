import Foundation
@testable import Gateway
import AppAttest
import GatewayConfig
import GatewayHTTP
import GatewayTestSupport
import XCTest

/// PROXY protocol listeners (`listen[].proxy_protocol: true`) over real sockets: crafted v1 lines and
/// v2 binary headers written by the test (raw loopback sockets, Python for TLS), the real upstream
/// process echoing what reached it. The header's source address becomes the client: in
/// X-Forwarded-For, in the access log (the built binary), and as the rate limit's key. A malformed
/// or missing header closes the connection without an answer.
final class ProxyProtocolTests: XCTestCase {
    private var upstream: UpstreamProcess?
    private var runtime: GatewayRuntime?
    private var plainPort: UInt16 = 0
    private var tlsPort: UInt16 = 0

    override func setUpWithError() throws {
        try super.setUpWithError()
        let up = try UpstreamProcess()
        upstream = up
        let certificate = TestPKI.shared.address
        let yaml = """
        listen:
          - {address: 127.0.0.1:0, proxy_protocol: true}
          - address: 127.0.0.1:0
            proxy_protocol: true
            tls: {certificates: [{chain: "\(certificate.chainPath)", key: "\(certificate.keyPath)"}]}
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
            environment: development
        endpoints:
          rate_limit: {requests_per_second: 1, burst: 1}
        upstreams:
          app: http://127.0.0.1:\(up.port)
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        timeouts:
          header: 2s
        log:
          access: false
        """
        let made = try GatewayRuntime(loaded: GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp"), loopCount: 2)
        runtime = made
        let listeners = try made.start()
        plainPort = try XCTUnwrap(listeners.data.first?.port)
        tlsPort = try XCTUnwrap(listeners.data.last?.port)
    }

    override func tearDown() {
        if let runtime {
            let done = DispatchSemaphore(value: 0)
            runtime.shutdown { done.signal() }
            _ = done.wait(timeout: .now() + 10)
        }
        upstream?.stop()
        super.tearDown()
    }

    private static let request = Array("GET /pp HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n\r\n".utf8)

    /// Writes `pieces` (pausing 50 ms between them) on a fresh connection and reads until the
    /// gateway closes it. Fails the test when it does not close within 10 s.
    private func exchange(_ pieces: [[UInt8]], port: UInt16? = nil, file: StaticString = #filePath, line: UInt = #line) throws -> [UInt8] {
        let fd = try LoopbackSocket.connect(port: port ?? plainPort)
        defer { close(fd) }
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        for (i, piece) in pieces.enumerated() {
            if i > 0 { usleep(50_000) }
            let sent = piece.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if sent < 0 { break }  // closed by the gateway already
        }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { received += buffer[0..<n]; continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { XCTFail("the gateway did not close the connection", file: file, line: line) }
            return received
        }
    }

    /// The X-Forwarded-For the upstream saw for `header` + the request.
    private func forwardedFor(_ header: [UInt8], file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let reply = try XCTUnwrap(HTTPReply.parseAll(try exchange([header + ProxyProtocolTests.request])).first, file: file, line: line)
        XCTAssertEqual(reply.status, 200, "\(reply)", file: file, line: line)
        return try XCTUnwrap(reply.echo, "\(reply)", file: file, line: line).values("X-Forwarded-For")
    }

    private func v2(command: UInt8 = 0x21, family: UInt8 = 0x11, _ body: [UInt8]) -> [UInt8] {
        ProxyProtocolHeader.v2Signature + [command, family, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    func testV1SourceIsTheClient() throws {
        XCTAssertEqual(try forwardedFor(Array("PROXY TCP4 203.0.113.7 127.0.0.1 40000 8080\r\n".utf8)), ["203.0.113.7"])
        XCTAssertEqual(try forwardedFor(Array("PROXY TCP6 2001:db8::7 ::1 40000 8080\r\n".utf8)), ["2001:db8::7"])
    }

    func testV2SourceIsTheClientAndTLVsAreSkipped() throws {
        let inet: [UInt8] = [198, 51, 100, 9, 127, 0, 0, 1, 0x9C, 0x40, 0x1F, 0x90]
        let tlvs: [UInt8] = [0x01, 0x00, 0x08] + Array("http/1.1".utf8) + [0x04, 0x00, 0x00, 0xE0, 0x00, 0x02, 0xAB, 0xCD]
        XCTAssertEqual(try forwardedFor(v2(inet + tlvs)), ["198.51.100.9"])
    }

    func testLocalAndUnknownKeepTheTCPPeer() throws {
        XCTAssertEqual(try forwardedFor(v2(command: 0x20, family: 0x00, [])), ["127.0.0.1"], "v2 LOCAL (balancer health check)")
        XCTAssertEqual(try forwardedFor(Array("PROXY UNKNOWN\r\n".utf8)), ["127.0.0.1"], "v1 UNKNOWN")
    }

    /// The header may arrive in pieces, and the request in the same segment as its end.
    func testHeaderInPiecesThenTheRequest() throws {
        let header = Array("PROXY TCP4 203.0.113.8 127.0.0.1 40000 8080\r\n".utf8)
        let bytes = try exchange([Array(header[0..<3]), Array(header[3..<20]), Array(header[20...]) + ProxyProtocolTests.request])
        XCTAssertEqual(HTTPReply.parseAll(bytes).first?.echo?.values("X-Forwarded-For"), ["203.0.113.8"])
    }

    /// Malformed headers and a request without any header: closed, no byte answered; the next good
    /// connection is served.
    func testMalformedOrMissingHeaderClosesTheConnection() throws {
        let bad: [[UInt8]] = [
            ProxyProtocolTests.request,                                           // no header
            Array("PROXY TCP4 203.0.113.7 127.0.0.1 40000\r\n".utf8),             // a field missing
            Array("PROXY TCP4 203.0.113.999 127.0.0.1 1 2\r\n".utf8),             // not an address
            Array("PROXY TCP4 203.0.113.7 127.0.0.1 1 2\n".utf8),                 // bare LF
            Array(("PROXY UNKNOWN " + String(repeating: "a", count: 120)).utf8),  // no CRLF within 107 bytes
            v2(command: 0x31, [0]),                                               // version 3
            v2(family: 0x12, [UInt8](repeating: 1, count: 12)),                   // datagram
            v2([UInt8](repeating: 1, count: 12) + [0x04, 0x00, 0x09, 0x00]),      // TLV overruns
        ]
        for header in bad {
            XCTAssertEqual(try exchange([header + ProxyProtocolTests.request]), [], "\(String(decoding: header, as: UTF8.self).debugDescription)")
        }
        XCTAssertEqual(try forwardedFor(Array("PROXY TCP4 203.0.113.7 127.0.0.1 40000 8080\r\n".utf8)), ["203.0.113.7"])
    }

    /// A connection that sends an incomplete header and then nothing is closed at the header timeout.
    func testIncompleteHeaderIsClosedAtTheHeaderTimeout() throws {
        XCTAssertEqual(try exchange([Array("PROXY TCP4 203.0.113.7".utf8)]), [])
    }

    /// The rate limit keys on the header's source: one bucket per client behind the balancer.
    func testRateLimitBucketsPerProxiedClient() throws {
        let body = "{\"keyId\":\"\(Base64.encode([UInt8](repeating: 9, count: 32)))\",\"purpose\":\"attest\"}"
        func post(from source: String) throws -> Int {
            let request = Array("POST /app-attest/v1/challenge HTTP/1.1\r\nHost: gw\r\nConnection: close\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8)
            let header = Array("PROXY TCP4 \(source) 127.0.0.1 40000 8080\r\n".utf8)
            return HTTPReply.parseAll(try exchange([header + request])).first?.status ?? 0
        }
        XCTAssertEqual(try post(from: "203.0.113.1"), 201)
        XCTAssertEqual(try post(from: "203.0.113.1"), 429, "the same client")
        XCTAssertEqual(try post(from: "203.0.113.2"), 201, "another client behind the same balancer")
    }

    /// curl's own PROXY v1 header (`--haproxy-protocol`), then HTTP/2 with prior knowledge: the h2c
    /// preface after the header is recognised.
    func testCurlsHeaderThenHTTP2WithPriorKnowledge() throws {
        _ = try ChildProcess.require("curl")  // installed by scripts/setup --tests: missing is a failure
        let result = try ChildProcess.run("curl", ["-s", "--max-time", "10", "--haproxy-protocol", "--http2-prior-knowledge",
                                                   "-o", "/dev/null", "-w", "%{http_code} %{http_version}",
                                                   "http://127.0.0.1:\(plainPort)/h2"])
        XCTAssertEqual(result.output, "200 2", result.output)
    }

    /// On a TLS listener the header comes before the TLS handshake (Python writes it, then wraps
    /// the socket in TLS verifying the listener against the test CA).
    func testHeaderBeforeTLS() throws {
        _ = try ChildProcess.require("python3")  // installed by scripts/setup --tests: missing is a failure
        let script = """
        import socket, ssl, sys
        s = socket.create_connection(("127.0.0.1", \(tlsPort)))
        s.sendall(b"PROXY TCP4 192.0.2.77 127.0.0.1 40000 443\\r\\n")
        ctx = ssl.create_default_context(cafile=sys.argv[1])
        t = ctx.wrap_socket(s, server_hostname="127.0.0.1")
        t.sendall(b"GET /tls HTTP/1.1\\r\\nHost: gw\\r\\nConnection: close\\r\\n\\r\\n")
        data = b""
        while True:
            chunk = t.recv(65536)
            if not chunk:
                break
            data += chunk
        sys.stdout.write(data.decode("latin-1"))
        """
        let result = try ChildProcess.run("python3", ["-c", script, TestPKI.shared.root.certificate])
        let reply = try XCTUnwrap(HTTPReply.parseAll(Array(result.output.utf8)).first, result.output)
        XCTAssertEqual(reply.status, 200, result.output)
        XCTAssertEqual(reply.echo?.values("X-Forwarded-For"), ["192.0.2.77"])
        XCTAssertEqual(reply.echo?.values("X-Forwarded-Proto"), ["https"])
    }

    /// The built binary logs the header's source as the access line's `client`.
    func testAccessLogShowsTheProxiedClient() throws {
        let up = try XCTUnwrap(upstream)
        let work = try E2EPaths.temporaryDirectory("proxy-binary")
        defer { try? FileManager.default.removeItem(at: work) }
        let config = work.appendingPathComponent("gateway.yaml")
        try """
        listen: [{address: 127.0.0.1:0, proxy_protocol: true}]
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app: http://127.0.0.1:\(up.port)
        routes:
          - path_prefix: /
            upstream: app
            mode: off
        """.write(to: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path])
        defer { process.stop(signal: SIGKILL, grace: 1) }
        let listenPort = try XCTUnwrap(StartedLine.wait(for: process)?.port, process.output)
        let bytes = try exchange([Array("PROXY TCP4 203.0.113.50 127.0.0.1 41234 8080\r\n".utf8) + ProxyProtocolTests.request], port: listenPort)
        XCTAssertEqual(HTTPReply.parseAll(bytes).first?.status, 200)
        kill(process.pid, SIGTERM)
        XCTAssertEqual(process.wait(), 0)
        let access = GatewayBinaryTests.jsonLines(process.output).filter { $0["type"] as? String == "access" }
        XCTAssertEqual(access.map { $0["client"] as? String }, ["203.0.113.50:41234"], process.output)
    }
}
