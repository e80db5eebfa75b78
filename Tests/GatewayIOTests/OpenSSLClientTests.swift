import GatewayRules
import Dispatch
import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The listener side against an independent client, `openssl s_client`: what it reports it
/// negotiated (version, ALPN, cipher), and what it is refused (TLS 1.1, a cipher outside the profile).
final class OpenSSLClientTests: XCTestCase {
    let pki = TestPKI.shared

    /// Accepts one TCP connection on 127.0.0.1 and runs a server `TLSConnection` handshake on it, on
    /// a thread of its own that waits for readiness with poll(2); then sends "hello\n" and
    /// close_notify, and reads until the client is gone.
    final class OneShotServer: @unchecked Sendable {  // `outcome` is written once by the thread, read after `finished`
        struct Outcome {
            var handshake: TLSIOResult
            var version: String?
            var alpn: String?
            var cipher: String?
            var serverName: String?
        }

        let port: UInt16
        private let listener: Int32
        private let finished = DispatchSemaphore(value: 0)
        private var outcome: Outcome?

        init(context: TLSServerContext) throws {
            listener = try Socket.listen(on: SocketAddress.literal(host: "127.0.0.1", port: 0)!, backlog: 4)
            port = Socket.localAddress(listener).port ?? 0
            let thread = Thread { [self] in
                outcome = serve(context)
                finished.signal()
            }
            thread.start()
        }

        deinit { close(listener) }

        /// Waits until readable (`write` false) or writable, at most 20 s.
        private static func wait(_ fd: Int32, write: Bool) -> Bool {
            var p = pollfd(fd: fd, events: Int16(write ? POLLOUT : POLLIN), revents: 0)
            return poll(&p, 1, 20_000) == 1
        }

        private func serve(_ context: TLSServerContext) -> Outcome {
            guard OneShotServer.wait(listener, write: false), case .success(let accepted?) = Socket.accept(listener) else {
                return Outcome(handshake: .failed("no connection"))
            }
            let fd = accepted.0
            defer { close(fd) }
            guard let tls = try? TLSConnection(server: context, fd: fd) else { return Outcome(handshake: .failed("SSL_new")) }
            defer { tls.close() }
            var result = TLSIOResult.wantRead
            loop: while true {
                result = tls.handshake()
                switch result {
                case .wantRead: guard OneShotServer.wait(fd, write: false) else { break loop }
                case .wantWrite: guard OneShotServer.wait(fd, write: true) else { break loop }
                case .done, .closed, .failed: break loop
                }
            }
            let outcome = Outcome(handshake: result, version: tls.protocolVersion, alpn: tls.negotiatedProtocol,
                                  cipher: tls.cipher, serverName: tls.serverName)
            guard result == .done else { return outcome }
            _ = Array("hello\n".utf8).withUnsafeBytes { tls.write($0) }
            tls.shutdown()
            var buffer = [UInt8](repeating: 0, count: 4_096)
            while true {
                let r = buffer.withUnsafeMutableBytes { tls.read(into: $0) }
                guard case .wantRead = r, OneShotServer.wait(fd, write: false) else { break }
            }
            return outcome
        }

        /// The server's outcome (after the client exited).
        func result() -> Outcome? {
            guard finished.wait(timeout: .now() + 30) == .success else { return nil }
            return outcome
        }
    }

    func context(_ certificates: [(chainPath: String, keyPath: String)], minVersion: TLSVersion = .tls12) throws -> TLSServerContext {
        try TLSServerContext(settings: TLSServerSettings(certificates: certificates.map { .init(chainPath: $0.chainPath, keyPath: $0.keyPath) },
                                                         minVersion: minVersion))
    }

    /// Runs `openssl s_client` against a one-shot server; returns its exit status, output and the
    /// server's outcome.
    func sClient(_ context: TLSServerContext, _ arguments: [String]) throws -> (status: Int32, output: String, server: OneShotServer.Outcome) {
        let server = try OneShotServer(context: context)
        let (status, output) = try ChildProcess.run("openssl", ["s_client", "-connect", "127.0.0.1:\(server.port)",
                                                                 "-CAfile", pki.root.certificate] + arguments)
        guard let outcome = server.result() else { throw TestPKIError.failed("the server thread did not finish: \(output)") }
        return (status, output, outcome)
    }

    /// The value after `prefix` on the first line starting with it.
    func line(_ output: String, _ prefix: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    func testSClientNegotiatesTLS13WithH2AndVerifies() throws {
        let (status, output, server) = try sClient(try context([pki.a, pki.b]), ["-servername", "b.test", "-alpn", "h2,http/1.1",
                                                                                 "-verify_hostname", "b.test", "-verify_return_error", "-ign_eof"])
        XCTAssertEqual(status, 0, output)
        XCTAssertEqual(server.handshake, .done)
        XCTAssertEqual(line(output, "New, "), "TLSv1.3, Cipher is \(server.cipher ?? "?")")
        XCTAssertEqual(line(output, "ALPN protocol: "), "h2")
        XCTAssertEqual(server.alpn, "h2")
        XCTAssertEqual(server.version, "TLSv1.3")
        XCTAssertEqual(server.serverName, "b.test")
        XCTAssertEqual(line(output, "Verify return code: "), "0 (ok)")
        XCTAssertTrue(output.contains("subject=CN = b.test"), "SNI picked the second certificate")
        XCTAssertTrue(output.contains("Server Temp Key: X25519"), output)
        XCTAssertTrue(output.contains("\nhello\n"), "application data went through, then our close_notify ended s_client")
    }

    /// RFC 6066 section 3: a session made under one certificate is never resumed under another
    /// server name's certificate (the certificate is chosen before resumption is considered, and
    /// each has its own session ID context): TLS 1.3 ticket, TLS 1.2 ticket, TLS 1.2 session ID. The
    /// same name resumes (the failing variant's control).
    func testASessionResumesOnlyUnderTheCertificateItWasMadeWith() throws {
        let context = try context([pki.a, pki.b])
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sni-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for (label, flags) in [("TLS 1.3 ticket", ["-tls1_3"]), ("TLS 1.2 ticket", ["-tls1_2"]),
                               ("TLS 1.2 session ID", ["-tls1_2", "-no_ticket"])] {
            let session = dir.appendingPathComponent(label.replacingOccurrences(of: " ", with: "-")).path
            let first = try sClient(context, flags + ["-servername", "a.test", "-sess_out", session, "-ign_eof"])
            XCTAssertEqual(first.status, 0, "\(label): \(first.output)")
            XCTAssertNotNil(line(first.output, "New, "), "\(label): \(first.output)")
            let same = try sClient(context, flags + ["-servername", "a.test", "-sess_in", session, "-ign_eof"])
            XCTAssertNotNil(line(same.output, "Reused, "), "\(label): the same name resumes: \(same.output)")
            let other = try sClient(context, flags + ["-servername", "b.test", "-sess_in", session, "-ign_eof",
                                                      "-verify_hostname", "b.test", "-verify_return_error"])
            XCTAssertEqual(other.status, 0, "\(label): \(other.output)")
            XCTAssertNotNil(line(other.output, "New, "), "\(label): another name's certificate gets a full handshake: \(other.output)")
            XCTAssertNil(line(other.output, "Reused, "), label)
            XCTAssertTrue(other.output.contains("subject=CN = b.test"), "\(label): \(other.output)")
            XCTAssertEqual(other.server.serverName, "b.test")
        }
    }

    /// A server name with a trailing dot selects the certificate of the name without it.
    func testATrailingDotInTheServerNameSelectsTheSameCertificate() throws {
        let dotted = try sClient(try context([pki.a, pki.b]), ["-servername", "b.test.", "-ign_eof"])
        XCTAssertEqual(dotted.status, 0, dotted.output)
        XCTAssertTrue(dotted.output.contains("subject=CN = b.test"), dotted.output)
    }

    func testSClientWithoutALPNAndWithHTTP11() throws {
        let context = try context([pki.a])
        let none = try sClient(context, ["-servername", "a.test"])
        XCTAssertEqual(none.status, 0, none.output)
        XCTAssertTrue(none.output.contains("No ALPN negotiated"), none.output)
        XCTAssertNil(none.server.alpn)
        let http11 = try sClient(context, ["-servername", "a.test", "-alpn", "http/1.1"])
        XCTAssertEqual(line(http11.output, "ALPN protocol: "), "http/1.1")
    }

    func testSClientTLS12GetsAnIntermediateCipherAndP256Works() throws {
        let context = try context([pki.b])
        let rsa = try sClient(context, ["-tls1_2", "-servername", "b.test", "-groups", "P-256"])
        XCTAssertEqual(rsa.status, 0, rsa.output)
        XCTAssertEqual(line(rsa.output, "New, "), "TLSv1.2, Cipher is ECDHE-RSA-AES256-GCM-SHA384")
        XCTAssertEqual(rsa.server.version, "TLSv1.2")
        XCTAssertTrue(rsa.output.contains("Server Temp Key: ECDH, prime256v1"), rsa.output)
        XCTAssertTrue(rsa.output.contains("Secure Renegotiation IS supported"), "RFC 5746 indication (renegotiation itself is off)")

        let chosen = try sClient(context, ["-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305"])
        XCTAssertEqual(line(chosen.output, "New, "), "TLSv1.2, Cipher is ECDHE-RSA-CHACHA20-POLY1305")
    }

    func testSClientTLS11IsRefused() throws {
        let context = try context([pki.a])
        // SECLEVEL=0 so that the client really offers TLS 1.1 (OpenSSL 3.0 refuses it at level 1+).
        let old = try sClient(context, ["-tls1_1", "-cipher", "DEFAULT@SECLEVEL=0"])
        XCTAssertNotEqual(old.status, 0, old.output)
        XCTAssertTrue(old.server.handshake.failed(containing: "unsupported protocol"), "\(old.server.handshake)")
        XCTAssertTrue(old.output.contains("alert protocol version") || old.output.contains("no protocols available"), old.output)
        let current = try sClient(context, ["-tls1_2"])
        XCTAssertEqual(current.status, 0, current.output)
        XCTAssertEqual(current.server.handshake, .done)
    }

    func testSClientCipherOutsideTheProfileIsRefused() throws {
        let context = try context([pki.b])
        for cipher in ["AES128-GCM-SHA256", "ECDHE-RSA-AES128-SHA", "ECDHE-RSA-AES128-SHA256"] {
            let outside = try sClient(context, ["-tls1_2", "-cipher", cipher])
            XCTAssertNotEqual(outside.status, 0, "\(cipher): \(outside.output)")
            XCTAssertTrue(outside.server.handshake.failed(containing: "no shared cipher"), "\(cipher): \(outside.server.handshake)")
        }
        let inside = try sClient(context, ["-tls1_2", "-cipher", "ECDHE-RSA-AES128-GCM-SHA256"])
        XCTAssertEqual(inside.status, 0, inside.output)
        XCTAssertEqual(line(inside.output, "New, "), "TLSv1.2, Cipher is ECDHE-RSA-AES128-GCM-SHA256")
    }

    func testSClientTLS12IsRefusedByMinVersion13() throws {
        let context = try context([pki.a], minVersion: .tls13)
        let refused = try sClient(context, ["-tls1_2"])
        XCTAssertNotEqual(refused.status, 0)
        XCTAssertTrue(refused.server.handshake.failed(containing: "unsupported protocol"))
        let accepted = try sClient(context, ["-tls1_3"])
        XCTAssertEqual(accepted.status, 0, accepted.output)
    }

    func testSClientGroupOutsideTheListIsRefused() throws {
        let context = try context([pki.a])
        let refused = try sClient(context, ["-groups", "P-384"])
        XCTAssertNotEqual(refused.status, 0, refused.output)
        XCTAssertTrue(refused.server.handshake.failed(containing: "error:"), "\(refused.server.handshake)")
        let accepted = try sClient(context, ["-groups", "X25519"])
        XCTAssertEqual(accepted.status, 0, accepted.output)
    }
}
