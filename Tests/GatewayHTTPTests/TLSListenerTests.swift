import Foundation
import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// TLS listeners over real sockets with real clients (curl, `openssl s_client`, Python `ssl`): the
/// handshake on the event loop, HTTP/1.1 over it (forwarded and answered, pipelined, large bodies),
/// what the handler learns (TLS version, `isSecure`), ALPN, SNI, versions, and the handshakes that
/// fail (plain HTTP on a TLS port, a client that never speaks, a client offering only TLS 1.1),
/// each costing its connection and one report, never the server.
final class TLSListenerTests: XCTestCase {
    private var harness: ProxyHarness!
    private let pki = TestPKI.shared

    override func setUpWithError() throws {
        try ChildProcess.require("openssl")
        let context = try TLSServerContext(settings: TLSServerSettings(
            certificates: [.init(chainPath: pki.address.chainPath, keyPath: pki.address.keyPath),
                           .init(chainPath: pki.b.chainPath, keyPath: pki.b.keyPath)],
            alpn: ["http/1.1"]))
        var timeouts = ProxyHarness.testTimeouts
        timeouts.tlsHandshake = 0.5
        harness = try ProxyHarness(timeouts: timeouts, tls: context)
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    private var caFile: String { pki.root.certificate }


    func testCurlOverTLSIsForwardedAndAnsweredWithTheConnectionMarkedSecure() throws {
        let (status, output) = try Curl.run(["--cacert", caFile, "-w", "\\n%{http_version} %{ssl_verify_result}",
                                             "--data-binary", "hello", harness.url("/p/tls?x=1")])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("\"target\": \"/p/tls?x=1\"") || output.contains("\"target\":\"/p/tls?x=1\""), output)
        XCTAssertTrue(output.hasSuffix("1.1 0"), "HTTP/1.1 over a verified TLS connection: \(output)")
        waitFor("the access record") { !harness.handler.completed.isEmpty }
        let record = try XCTUnwrap(harness.handler.completed.last)
        XCTAssertTrue(record.connection.isSecure)
        XCTAssertEqual(record.connection.tlsVersion, "TLSv1.3")
        XCTAssertEqual(record.status, 200)
        XCTAssertEqual(record.requestBodyBytes, 5)
        let handshake = try XCTUnwrap(harness.handler.tlsHandshakes.first)
        XCTAssertTrue(handshake.succeeded)
        XCTAssertEqual(handshake.version, "TLSv1.3")
        XCTAssertEqual(handshake.alpn, "http/1.1")
    }

    func testLargeResponseAndRequestBodiesCrossTLS() throws {
        let body = String(repeating: "0123456789abcdef", count: 65536)  // 1 MiB up
        let file = try pki.file("upload-\(UUID().uuidString)", body)
        let (status, output) = try Curl.run(["--cacert", caFile, "-o", "/dev/null", "-w", "%{size_download} %{http_code}",
                                             "--data-binary", "@\(file)", harness.url("/p/big?size=3000000")])
        XCTAssertEqual(status, 0, output)
        XCTAssertEqual(output, "3000000 200", "3 MB down through partial TLS writes")
        waitFor("the access record") { !harness.handler.completed.isEmpty }
        XCTAssertEqual(harness.handler.completed.last?.requestBodyBytes, 1 << 20)
        XCTAssertEqual(harness.handler.completed.last?.responseBodyBytes, 3_000_000)
    }

    /// Twenty pipelined requests, each in its own TLS record, sent back to back: OpenSSL reads ahead,
    /// so records arriving together sit in the session, not in the socket, after the first read;
    /// every request must still be answered, in order.
    func testPipelinedRequestsInSeparateTLSRecordsAreAllAnswered() throws {
        var steps: [RawClient.Step] = (0..<20).map { .send("GET /local/\($0) HTTP/1.1\r\nHost: h\r\n\r\n") }
        steps.append(.send("GET /local/last HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"))
        let r = try RawClient.run(port: harness.port, timeout: 5, tlsCA: caFile, steps)
        let responses = r.responses()
        XCTAssertEqual(responses.count, 21, r.text)
        XCTAssertEqual(responses.map { $0.header("X-Target") ?? "" }, (0..<20).map { "/local/\($0)" } + ["/local/last"])
        XCTAssertTrue(r.closed)
    }

    func testOpenSSLClientNegotiatesTLS13AndALPNAndSNISelectsTheCertificate() throws {
        let plain = try ChildProcess.run("sh", ["-c", "openssl s_client -connect 127.0.0.1:\(harness.port) -alpn h2,http/1.1 "
                                                + "-CAfile \(caFile) -verify_return_error </dev/null 2>&1"])
        XCTAssertTrue(plain.output.contains("ALPN protocol: http/1.1"), plain.output)
        XCTAssertTrue(plain.output.contains("TLSv1.3"), plain.output)
        XCTAssertTrue(plain.output.contains("Verify return code: 0 (ok)"), plain.output)
        XCTAssertTrue(plain.output.contains("CN = 127.0.0.1"), "no SNI: the first certificate\n\(plain.output)")
        let sni = try ChildProcess.run("sh", ["-c", "openssl s_client -connect 127.0.0.1:\(harness.port) -servername b.test "
                                              + "-CAfile \(caFile) -verify_return_error </dev/null 2>&1"])
        XCTAssertTrue(sni.output.contains("CN = b.test"), "SNI b.test: the second certificate\n\(sni.output)")
        XCTAssertTrue(sni.output.contains("Verify return code: 0 (ok)"), sni.output)
        let tls12 = try ChildProcess.run("sh", ["-c", "openssl s_client -connect 127.0.0.1:\(harness.port) -tls1_2 "
                                                + "-CAfile \(caFile) </dev/null 2>&1"])
        XCTAssertTrue(tls12.output.contains("Protocol  : TLSv1.2"), tls12.output)
        XCTAssertTrue(tls12.output.contains("ECDHE-ECDSA-"), "the P-256 certificate with an ECDHE suite\n\(tls12.output)")
    }

    func testTLS11ClientIsRefusedAndCounted() throws {
        let r = try ChildProcess.run("sh", ["-c", "openssl s_client -connect 127.0.0.1:\(harness.port) -tls1_1 "
                                            + "-cipher 'DEFAULT:@SECLEVEL=0' </dev/null 2>&1"])
        XCTAssertTrue(r.output.contains("alert protocol version"), r.output)
        waitFor("the failed handshake report") { harness.handler.tlsHandshakes.contains { !$0.succeeded } }
        let failure = try XCTUnwrap(harness.handler.tlsHandshakes.first { !$0.succeeded })
        XCTAssertNotNil(failure.failure)
        XCTAssertNil(failure.version)
        // The listener goes on serving.
        let (status, output) = try Curl.run(["--cacert", caFile, harness.url("/local/after")])
        XCTAssertEqual(status, 0, output)
    }

    func testPlainHTTPOnATLSPortFailsTheHandshakeOnly() throws {
        let r = try RawClient.run(port: harness.port, timeout: 3, [.send("GET / HTTP/1.1\r\nHost: h\r\n\r\n")])
        XCTAssertTrue(r.closed, "the connection is closed")
        XCTAssertFalse(r.text.contains("HTTP/1.1 200"), r.text)
        waitFor("the failed handshake report") { harness.handler.tlsHandshakes.contains { !$0.succeeded } }
        XCTAssertTrue(harness.handler.completed.isEmpty, "no request was served")
        let (status, output) = try Curl.run(["--cacert", caFile, harness.url("/local/after")])
        XCTAssertEqual(status, 0, output)
    }

    /// A client that connects and never sends a ClientHello is closed after `timeouts.tlsHandshake`
    /// (0.5 s here), while other clients are served in the meantime.
    func testStalledHandshakeTimesOutWithoutDelayingOthers() throws {
        let fd = try LoopbackSocket.connect(port: harness.port)
        defer { close(fd) }
        let (status, output) = try Curl.run(["--cacert", caFile, harness.url("/local/meanwhile")])
        XCTAssertEqual(status, 0, "served while another handshake stalls: \(output)")
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var byte: UInt8 = 0
        XCTAssertEqual(recv(fd, &byte, 1, 0), 0, "the stalled connection is closed by the server (not by our 5 s receive timeout)")
        waitFor("the timeout report") { harness.handler.tlsHandshakes.contains { $0.failure == "timeout" } }
    }
}
