import Foundation
import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import XCTest

/// HTTP/2 over TLS (ALPN `h2`, RFC 9113 section 3.2) with real clients: curl `--http2`, nghttp and
/// h2load verifying the listener against a test CA; a client that offers only `http/1.1` on the same
/// listener gets HTTP/1.1.
final class HTTP2OverTLSTests: XCTestCase {
    private var harness: ProxyHarness!
    private let pki = TestPKI.shared

    override func setUpWithError() throws {
        try ChildProcess.require("openssl")
        let context = try TLSServerContext(settings: TLSServerSettings(
            certificates: [.init(chainPath: pki.address.chainPath, keyPath: pki.address.keyPath)],
            alpn: ["h2", "http/1.1"]))
        harness = try ProxyHarness(tls: context)
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }


    func testCurlNegotiatesH2AndHTTP11ByALPN() throws {
        let ca = pki.root.certificate
        let h2 = try Curl.run(["--http2", "--cacert", ca, "-w", "\\n%{http_version}", "--data-binary", "abc", harness.url("/p/h2")])
        XCTAssertEqual(h2.status, 0, h2.output)
        XCTAssertTrue(h2.output.hasSuffix("\n2"), "HTTP/2 by ALPN: \(h2.output)")
        let h1 = try Curl.run(["--http1.1", "--cacert", ca, "-w", "\\n%{http_version}", harness.url("/p/h1")])
        XCTAssertEqual(h1.status, 0, h1.output)
        XCTAssertTrue(h1.output.hasSuffix("\n1.1"), "HTTP/1.1 when only http/1.1 is offered: \(h1.output)")
        waitFor("both access records") { harness.handler.completed.count >= 2 }
        let protocols = harness.handler.completed.map { "\($0.connection.protocolName) \($0.connection.tlsVersion ?? "-")" }
        XCTAssertEqual(Set(protocols), ["h2 TLSv1.3", "h1 TLSv1.3"])
        XCTAssertEqual(harness.handler.completed.first { $0.connection.protocolName == "h2" }?.requestBodyBytes, 3)
    }

    /// RFC 9113 section 3.2: over TLS, HTTP/2 is chosen by ALPN only. A client that negotiated no
    /// ALPN (or `http/1.1`) and sends the HTTP/2 preface gets an HTTP/1.1 refusal, not an HTTP/2
    /// session; the same connection kind serves plain HTTP/1.1.
    func testHTTP2WithoutALPNIsNotServed() throws {
        let script = """
        import socket, ssl, sys
        port, alpn, payload = int(sys.argv[1]), sys.argv[2], sys.argv[3].encode().decode("unicode_escape").encode("latin-1")
        ctx = ssl.create_default_context(cafile=sys.argv[4])
        if alpn != "none":
            ctx.set_alpn_protocols([alpn])
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port), timeout=10), server_hostname="127.0.0.1")
        s.sendall(payload)
        data = b""
        try:
            while not data.endswith(b"\\r\\n\\r\\n") and len(data) < 65536:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
        except socket.timeout:
            pass
        print(repr(s.selected_alpn_protocol()), repr(data[:16]))
        """
        let preface = "PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n"
        for alpn in ["none", "http/1.1"] {
            let r = try ChildProcess.run("python3", ["-c", script, String(harness.port), alpn, preface, pki.root.certificate])
            XCTAssertEqual(r.status, 0, r.output)
            XCTAssertTrue(r.output.contains("b'HTTP/1.1 4") || r.output.contains("b'HTTP/1.1 5"), "\(alpn): \(r.output)")
        }
        let get = "GET /local/no-alpn HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n"
        let plain = try ChildProcess.run("python3", ["-c", script, String(harness.port), "none", get, pki.root.certificate])
        XCTAssertTrue(plain.output.contains("None b'HTTP/1.1 200"), plain.output)
    }

    func testNghttpOverTLS() throws {
        guard ChildProcess.isAvailable("nghttp") else { return XCTFail("nghttp (nghttp2-client) not installed") }
        // nghttp has no CA option: it does not verify; curl and h2load cover verification.
        let r = try ChildProcess.run("nghttp", ["-v", "-t", "10", harness.url("/local/nghttp"), harness.url("/e/two")])
        XCTAssertEqual(r.status, 0, r.output)
        XCTAssertTrue(r.output.contains("The negotiated protocol: h2"), "ALPN h2: \(r.output)")
        XCTAssertTrue(r.output.contains("[SETTINGS_MAX_CONCURRENT_STREAMS(0x03):100]"), r.output)
        XCTAssertTrue(r.output.contains("x-target: /local/nghttp"), r.output)
        XCTAssertTrue(r.output.contains("\"target\": \"/e/two\""), r.output)
    }

    func testH2loadOverTLSAllRequestsSucceed() throws {
        guard ChildProcess.isAvailable("h2load") else { return XCTFail("h2load (nghttp2-client) not installed") }
        let local = try ChildProcess.run("h2load", ["-n", "2000", "-c", "10", "-m", "10", harness.url("/local/load")])
        XCTAssertEqual(local.status, 0, local.output)
        XCTAssertTrue(local.output.contains("2000 succeeded, 0 failed, 0 errored"), local.output)
        XCTAssertTrue(local.output.contains("Protocol: TLSv1.3"), local.output)
        XCTAssertTrue(local.output.contains("Application protocol: h2"), local.output)
        let forwarded = try ChildProcess.run("h2load", ["-n", "300", "-c", "10", "-m", "10", harness.url("/load?size=20000")])
        XCTAssertEqual(forwarded.status, 0, forwarded.output)
        XCTAssertTrue(forwarded.output.contains("300 succeeded, 0 failed, 0 errored"), forwarded.output)
        XCTAssertTrue(forwarded.output.contains("status codes: 300 2xx"), forwarded.output)
        let handshakes = harness.handler.tlsHandshakes
        XCTAssertEqual(handshakes.filter { $0.alpn == "h2" && $0.succeeded }.count, 20, "10 connections per run")
    }
}
