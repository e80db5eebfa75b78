import Foundation
import GatewayHTTP
import GatewayIO
import GatewayTestSupport
import XCTest

/// `https://` upstreams: the proxy's TLS client against a real HTTPS server process (Python `ssl`)
/// with a certificate from a test CA: verified and forwarded, kept alive, refused with
/// `502 upstream_tls_failed` when the CA or the name does not match, and accepted anyway only when
/// verification is turned off.
final class UpstreamTLSTests: XCTestCase {
    private let pki = TestPKI.shared
    private var group: EventLoopGroup!
    private var upstream: TestUpstream!
    private var servers: [HTTPServer] = []
    private var pools: [UpstreamPool] = []

    override func setUpWithError() throws {
        try ChildProcess.require("openssl")
        group = EventLoopGroup(loopCount: 2, timerResolution: 0.01)
        upstream = try TestUpstream(tls: pki.address)
    }

    override func tearDown() {
        for server in servers {
            let done = DispatchSemaphore(value: 0)
            server.shutdown(gracePeriod: 1) { done.signal() }
            XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "the server shut down within 5 s")
        }
        for pool in pools { pool.shutdown() }
        group?.shutdown()
        upstream = nil
    }

    /// A plain proxy listener forwarding everything to the HTTPS upstream with `client` and `serverName`.
    private func proxy(ca: String?, serverName: String, verify: Bool = true) throws -> UInt16 {
        let context = try TLSClientContext(settings: TLSClientSettings(verify: verify, caPath: ca))
        var configuration = UpstreamConfiguration(name: "tls", address: .tcp(host: "127.0.0.1", port: try XCTUnwrap(upstream.port)))
        configuration.tls = (context, serverName)
        let pool = try UpstreamPool(configuration, group: group)
        pools.append(pool)
        let server = HTTPServer(configuration: HTTPServerConfiguration(listeners: [.tcp(host: "127.0.0.1", port: 0)]),
                                group: group, handler: ProxyTestHandler(upstream: pool))
        servers.append(server)
        return try XCTUnwrap(server.start().first?.port)
    }

    func testVerifiedUpstreamIsForwardedAndKeptAlive() throws {
        let port = try proxy(ca: pki.root.certificate, serverName: "127.0.0.1")
        let (status, output) = try Curl.run(["-w", "\\n%{http_code}", "--data-binary", "hello",
                                             "http://127.0.0.1:\(port)/p/1", "http://127.0.0.1:\(port)/p/2?size=200000"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("\"bodyLength\": 5") || output.contains("\"bodyLength\":5"), output)
        XCTAssertTrue(output.hasSuffix("200"), output)
        XCTAssertEqual(try upstream.stats().connections, 2, "one kept-alive TLS connection for both requests, plus the stats request")
    }

    /// A body delimited by the close ends over TLS only with a close_notify (RFC 8446 section 6.1):
    /// a bare TCP close may be a truncation made on the path, so the client's response is cut short
    /// (no final chunk: curl reports a partial transfer), while the close_notify ending is complete.
    func testCloseDelimitedBodyNeedsCloseNotify() throws {
        let port = try proxy(ca: pki.root.certificate, serverName: "127.0.0.1")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("notify-\(UUID().uuidString).bin")
        defer { try? FileManager.default.removeItem(at: file) }
        let notified = try Curl.run(["-o", file.path, "-w", "%{http_code}", "http://127.0.0.1:\(port)/p/x?untilclose=5000&notify=1"])
        XCTAssertEqual(notified.status, 0, notified.output)
        XCTAssertEqual(notified.output, "200")
        XCTAssertEqual(try Data(contentsOf: file).count, 5000, "the whole body")
        let bare = try Curl.run(["-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/p/x?untilclose=5000"])
        XCTAssertEqual(bare.output.suffix(3), "200", "the head had been relayed")
        XCTAssertEqual(bare.status, 18, "curl: partial transfer (no final chunk); \(bare.output)")
    }

    func testUntrustedCertificateIs502UpstreamTLSFailed() throws {
        let port = try proxy(ca: pki.wrongRoot.certificate, serverName: "127.0.0.1")
        let (status, output) = try Curl.run(["-w", "\\n%{http_code}", "http://127.0.0.1:\(port)/p/x"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.contains("upstream_tls_failed"), output)
        XCTAssertTrue(output.hasSuffix("502"), output)
    }

    func testCertificateForAnotherNameIs502UpstreamTLSFailed() throws {
        let port = try proxy(ca: pki.root.certificate, serverName: "a.test")
        let (status, output) = try Curl.run(["-w", "\\n%{http_code}", "http://127.0.0.1:\(port)/p/x"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasSuffix("502"), output)
    }

    func testVerificationOffAcceptsAnUntrustedUpstream() throws {
        let port = try proxy(ca: pki.wrongRoot.certificate, serverName: "a.test", verify: false)
        let (status, output) = try Curl.run(["-w", "\\n%{http_code}", "http://127.0.0.1:\(port)/p/x"])
        XCTAssertEqual(status, 0, output)
        XCTAssertTrue(output.hasSuffix("200"), output)
    }
}
