import COpenSSL
import GatewayRules
import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Moving application data: large transfers with partial writes, `OutputBuffer` flushing through
/// TLS, the peer's close_notify versus a bare end of file, socket errors, error-queue isolation.
final class TLSTransferTests: XCTestCase {
    let pki = TestPKI.shared

    func pair(maxVersion: TLSVersion = .tls13) throws -> TLSPair {
        let server = try TLSServerContext(settings: TLSServerSettings(certificates: [.init(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath)]))
        let client = try TLSClientContext(settings: TLSClientSettings(caPath: pki.root.certificate, maxVersion: maxVersion))
        let pair = try TLSPair(server: server, client: client, serverName: "a.test")
        pair.handshakeSucceeds()
        return pair
    }

    static func pattern(_ count: Int, seed: UInt8) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            for i in 0..<count { buffer[i] = UInt8(truncatingIfNeeded: i &* 31 &+ Int(seed) &+ (i >> 8)) }
            initialized = count
        }
    }

    func testOneMebibyteBothWaysWithPartialWrites() throws {
        for version in [TLSVersion.tls13, .tls12] {
            let pair = try pair(maxVersion: version)
            let up = TLSTransferTests.pattern(1 << 20, seed: 1)
            let down = TLSTransferTests.pattern(1 << 20, seed: 2)
            let result = pair.exchange(toServer: up, toClient: down)
            XCTAssertEqual(result.atServer.count, up.count, "\(version)")
            XCTAssertTrue(result.atServer == up, "\(version): bytes arrive intact and in order")
            XCTAssertTrue(result.atClient == down, "\(version)")
            XCTAssertLessThanOrEqual(result.largestWrite, 65_536, "a write call takes a record or a few (partial writes): \(version)")
            XCTAssertGreaterThan(result.partialWrites, 16, "\(version)")
        }
    }

    func testAWriteIntoAFullSocketWantsWriteAndRetriesWithTheSameBytes() throws {
        let pair = try pair()
        let data = TLSTransferTests.pattern(4 << 20, seed: 3)
        var sent = 0
        var blocked = false
        while sent < data.count {
            let r = data.withUnsafeBytes { pair.client.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
            if case .wrote(let n) = r { sent += n; continue }
            XCTAssertEqual(r, .wantWrite)
            blocked = true
            break
        }
        XCTAssertTrue(blocked, "the socket pair fills up before 4 MiB")
        // Drain the server, then the retry (same bytes, from a moved copy) continues where it stopped.
        var received = TLSPair.readAvailable(pair.server).bytes
        let copy = Array(data[sent...])
        let retry = copy.withUnsafeBytes { pair.client.write($0) }
        guard case .wrote(let n) = retry else { return XCTFail("\(retry)") }
        sent += n
        let rest = pair.exchange(toServer: Array(data[sent...]), toClient: [])
        received += TLSPair.readAvailable(pair.server).bytes
        received += rest.atServer
        XCTAssertEqual(received.count, data.count)
        XCTAssertTrue(received == data)
    }

    func testOutputBufferFlushesThroughTLS() throws {
        let pair = try pair()
        var output = OutputBuffer()
        let data = TLSTransferTests.pattern(3 << 20, seed: 4)
        data.withUnsafeBytes { output.append($0) }
        var received: [UInt8] = []
        var rounds = 0
        var sawWantWrite = false
        var total = 0
        while true {
            let (result, written) = pair.client.flush(&output)
            total += written
            if result == .done { break }
            XCTAssertEqual(result, .wantWrite)
            sawWantWrite = true
            XCTAssertEqual(output.count, data.count + rounds - total, "what was not taken stays queued")
            output.append(0xEE)  // appending while blocked is allowed: the same prefix is offered again
            received += TLSPair.readAvailable(pair.server).bytes
            rounds += 1
            XCTAssertLessThan(rounds, 1_000)
            if rounds >= 1_000 { return }
        }
        received += TLSPair.readAvailable(pair.server).bytes
        XCTAssertTrue(sawWantWrite)
        XCTAssertTrue(output.isEmpty)
        XCTAssertEqual(received.count, data.count + rounds)
        XCTAssertTrue(Array(received[0..<data.count]) == data)
        XCTAssertEqual(Set(received[data.count...]), [0xEE])
    }

    func testCloseNotifyIsAClosedReadWithTheFlagSet() throws {
        let pair = try pair()
        pair.ping()
        pair.client.shutdown()
        pair.client.shutdown()  // once only
        let (bytes, stop) = TLSPair.readAvailable(pair.server)
        XCTAssertEqual(bytes, [])
        XCTAssertEqual(stop, .closed)
        XCTAssertTrue(pair.server.receivedCloseNotify)
        // The server may still answer (half close), then close itself.
        let answer = Array("bye".utf8).withUnsafeBytes { pair.server.write($0) }
        XCTAssertEqual(answer, .wrote(3))
        pair.server.shutdown()
        let atClient = TLSPair.readAvailable(pair.client)
        XCTAssertEqual(String(decoding: atClient.bytes, as: UTF8.self), "bye")
        XCTAssertEqual(atClient.stop, .closed)
        XCTAssertTrue(pair.client.receivedCloseNotify)
    }

    func testABareEndOfFileIsAClosedReadWithoutTheFlag() throws {
        let pair = try pair()
        pair.ping()
        pair.closeClientSocket()
        let (_, stop) = TLSPair.readAvailable(pair.server)
        XCTAssertEqual(stop, .closed)
        XCTAssertFalse(pair.server.receivedCloseNotify)
        XCTAssertEqual(TLSPair.readAvailable(pair.server).stop, .failed("connection failed earlier"))
        pair.server.shutdown()  // nothing is sent after the failure
    }

    func testAnEndOfFileDuringTheHandshakeIsClosed() throws {
        let server = try TLSServerContext(settings: TLSServerSettings(certificates: [.init(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath)]))
        let client = try TLSClientContext(settings: TLSClientSettings(caPath: pki.root.certificate))
        let pair = try TLSPair(server: server, client: client, serverName: "a.test")
        XCTAssertEqual(pair.server.handshake(), .wantRead)
        pair.closeClientSocket()  // a client that connects and leaves (a port scan, a health check)
        XCTAssertEqual(pair.server.handshake(), .closed)
        XCTAssertFalse(pair.server.receivedCloseNotify)

        // After the ClientHello, the server's answer meets a closed socket: a socket error.
        let second = try TLSPair(server: server, client: client, serverName: "a.test")
        XCTAssertEqual(second.client.handshake(), .wantRead, "ClientHello sent")
        second.closeClientSocket()
        XCTAssertTrue(second.server.handshake().failed(containing: "Broken pipe"))
    }

    func testGarbageInsteadOfAHandshakeFails() throws {
        let server = try TLSServerContext(settings: TLSServerSettings(certificates: [.init(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath)]))
        let client = try TLSClientContext(settings: TLSClientSettings(caPath: pki.root.certificate))
        let pair = try TLSPair(server: server, client: client, serverName: "a.test")
        _ = "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n".withCString { write(pair.clientFD, $0, strlen($0)) }
        let result = pair.server.handshake()
        XCTAssertTrue(result.failed(containing: "error:"), "\(result)")
        XCTAssertTrue(result.failed(containing: "http request") || result.failed(containing: "wrong version number"), "\(result)")
    }

    func testWritingToAClosedPeerFailsWithoutSIGPIPE() throws {
        // SIGPIPE is not ignored here: a write(2) on the dead socket would kill the test process.
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        let pair = try pair()
        pair.closeClientSocket()
        var result = TLSWrite.wrote(0)
        for _ in 0..<4 {
            result = Array("hello".utf8).withUnsafeBytes { pair.server.write($0) }
            if case .failed = result { break }
        }
        guard case .failed(let reason) = result else { return XCTFail("\(result)") }
        XCTAssertTrue(reason.contains("Broken pipe") || reason.contains("Connection reset"), reason)
        var output = OutputBuffer()
        output.append("more" as StaticString)
        let flushed = pair.server.flush(&output)
        XCTAssertEqual(flushed.result, .failed("connection failed earlier"))
        XCTAssertEqual(flushed.written, 0)
    }

    func testOneConnectionsErrorsNeverReachAnother() throws {
        let good = try pair()
        let server = try TLSServerContext(settings: TLSServerSettings(certificates: [.init(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath)]))
        let wrongCA = try TLSClientContext(settings: TLSClientSettings(caPath: pki.wrongRoot.certificate))
        for _ in 0..<3 {
            let bad = try TLSPair(server: server, client: wrongCA, serverName: "a.test")
            XCTAssertTrue(bad.handshake().client.failed(containing: "certificate verify failed"))
            // Interleaved on the same thread: the good connection sees no stale error.
            good.ping()
            XCTAssertEqual(good.client.write(UnsafeRawBufferPointer(start: nil, count: 0)), .wrote(0))
            let r = [UInt8](repeating: 0, count: 16).withUnsafeBytes { good.client.write($0) }
            XCTAssertEqual(r, .wrote(16))
            XCTAssertEqual(TLSPair.readAvailable(good.server).bytes.count, 16)
        }
    }

    /// Another OpenSSL user on the loop's thread (the verifier, a certificate check) can leave an error
    /// queued; `SSL_get_error` would then call a plain "nothing to read yet" a protocol failure. The
    /// read and the write peek and empty the queue first (`TLSOpenSSLErrors.clearBeforeIO`).
    func testAForeignErrorLeftOnTheThreadDoesNotFailTheNextRead() throws {
        let pair = try pair()
        for round in 0..<3 {
            Self.leaveAnOpenSSLError()
            XCTAssertNotEqual(ERR_peek_error(), 0, "the set-up queued an error")
            var buffer = [UInt8](repeating: 0, count: 64)
            let idle = buffer.withUnsafeMutableBytes { pair.server.read(into: $0) }
            XCTAssertEqual(idle, .wantRead, "round \(round): nothing sent yet is not a failure")
            XCTAssertEqual(ERR_peek_error(), 0, "the queue was emptied")
            Self.leaveAnOpenSSLError()
            let wrote = [UInt8](repeating: 7, count: 16).withUnsafeBytes { pair.client.write($0) }
            XCTAssertEqual(wrote, .wrote(16), "round \(round)")
            XCTAssertEqual(TLSPair.readAvailable(pair.server).bytes, [UInt8](repeating: 7, count: 16))
        }
    }

    /// Queues an ASN.1 decoding error on this thread, as a failed parse elsewhere would.
    static func leaveAnOpenSSLError() {
        let garbage: [UInt8] = [0x30, 0x82, 0xff, 0xff, 0x01]
        garbage.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            XCTAssertNil(d2i_X509(nil, &cursor, buffer.count))
        }
    }

    func testBufferedInputIsReported() throws {
        let pair = try pair()
        let data = TLSTransferTests.pattern(20_000, seed: 5)
        _ = pair.exchange(toServer: [], toClient: [])
        var sent = 0
        while sent < data.count {
            guard case .wrote(let n) = data.withUnsafeBytes({ pair.client.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }) else {
                return XCTFail()
            }
            sent += n
        }
        var small = [UInt8](repeating: 0, count: 100)
        let first = small.withUnsafeMutableBytes { pair.server.read(into: $0) }
        XCTAssertEqual(first, .bytes(100))
        XCTAssertTrue(pair.server.hasBufferedInput, "the rest of the record waits inside OpenSSL")
        let rest = TLSPair.readAvailable(pair.server)
        XCTAssertEqual(rest.bytes.count, data.count - 100)
        XCTAssertEqual(rest.stop, .wantRead)
        XCTAssertFalse(pair.server.hasBufferedInput)
    }

    func testAPartialRecordIsNotInputAReadCanUse() throws {
        // After the handshake: a real record from the client, taken off the socket and fed back to
        // the server in two pieces (its first byte, later the rest).
        let pair = try pair()
        XCTAssertEqual(Array("hello".utf8).withUnsafeBytes { pair.client.write($0) }, .wrote(5))
        var raw = [UInt8](repeating: 0, count: 4096)
        let n = raw.withUnsafeMutableBytes { Glibc.read(pair.serverFD, $0.baseAddress, $0.count) }
        XCTAssertGreaterThan(n, 5, "one encrypted record")
        let record = Array(raw[0..<max(n, 1)])
        XCTAssertEqual(record.first, 0x17, "application data")
        XCTAssertEqual(record.withUnsafeBytes { write(pair.clientFD, $0.baseAddress, 1) }, 1)
        var buffer = [UInt8](repeating: 0, count: 64)
        XCTAssertEqual(buffer.withUnsafeMutableBytes { pair.server.read(into: $0) }, .wantRead)
        XCTAssertFalse(pair.server.hasBufferedInput,
                       "OpenSSL holds the byte (SSL_has_pending), but no read can use it before the rest arrives")
        XCTAssertEqual(record.withUnsafeBytes { write(pair.clientFD, $0.baseAddress! + 1, $0.count - 1) }, record.count - 1)
        let got = TLSPair.readAvailable(pair.server)
        XCTAssertEqual(got.bytes, Array("hello".utf8), "the completed record reads as before")
        XCTAssertEqual(got.stop, .wantRead)

        // During the handshake: one byte of a handshake record.
        let server = try TLSServerContext(settings: TLSServerSettings(certificates: [.init(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath)]))
        let client = try TLSClientContext(settings: TLSClientSettings(caPath: pki.root.certificate))
        let fresh = try TLSPair(server: server, client: client, serverName: "a.test")
        var header: UInt8 = 0x16
        XCTAssertEqual(write(fresh.clientFD, &header, 1), 1)
        XCTAssertEqual(fresh.server.handshake(), .wantRead)
        XCTAssertFalse(fresh.server.hasBufferedInput, "a partial handshake record is not input a step can use")
    }

    func testClosedConnectionAnswersFailed() throws {
        let pair = try pair()
        pair.server.close()
        pair.server.close()
        XCTAssertTrue(pair.server.isClosed)
        XCTAssertEqual(pair.server.handshake(), .failed("connection closed"))
        XCTAssertEqual([UInt8](repeating: 0, count: 4).withUnsafeBytes { pair.server.write($0) }, .failed("connection closed"))
        var buffer = [UInt8](repeating: 0, count: 4)
        XCTAssertEqual(buffer.withUnsafeMutableBytes { pair.server.read(into: $0) }, .failed("connection closed"))
        XCTAssertNil(pair.server.negotiatedProtocol)
        XCTAssertNil(pair.server.cipher)
        XCTAssertFalse(pair.server.sessionReused)
        pair.server.shutdown()
    }
}
