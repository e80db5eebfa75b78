import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// A server and a client `TLSConnection` over the two ends of a non-blocking `socketpair`, driven
/// by hand on the test's thread: each step calls whichever side is not finished; no sleeps, the
/// sockets' buffers are the only queue.
final class TLSPair {
    let server: TLSConnection
    let client: TLSConnection
    let serverFD: Int32
    let clientFD: Int32
    private var clientClosed = false
    private var serverClosed = false

    init(server context: TLSServerContext, client clientContext: TLSClientContext, serverName: String) throws {
        var fds: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw TestPKIError.failed("socketpair: \(errno)")
        }
        serverFD = fds[0]
        clientFD = fds[1]
        server = try TLSConnection(server: context, fd: serverFD)
        client = try TLSConnection(client: clientContext, fd: clientFD, serverName: serverName)
    }

    deinit {
        server.close()
        client.close()
        if !serverClosed { Glibc.close(serverFD) }
        if !clientClosed { Glibc.close(clientFD) }
    }

    /// Closes the client's socket without any TLS close (a bare end of file for the server).
    func closeClientSocket() {
        client.close()
        if !clientClosed { Glibc.close(clientFD) }
        clientClosed = true
    }

    /// Closes the server's socket.
    func closeServerSocket() {
        server.close()
        if !serverClosed { Glibc.close(serverFD) }
        serverClosed = true
    }

    private static func finished(_ r: TLSIOResult) -> Bool {
        switch r {
        case .done, .closed, .failed: return true
        case .wantRead, .wantWrite: return false
        }
    }

    /// Runs both handshakes until each is done or failed (or nothing moves for a few rounds).
    @discardableResult
    func handshake() -> (server: TLSIOResult, client: TLSIOResult) {
        var s = TLSIOResult.wantRead
        var c = TLSIOResult.wantRead
        for _ in 0..<100 {
            if !TLSPair.finished(c) { c = client.handshake() }
            if !TLSPair.finished(s) { s = server.handshake() }
            if TLSPair.finished(s) && TLSPair.finished(c) { break }
        }
        return (s, c)
    }

    /// Asserts both handshakes are `.done`.
    func handshakeSucceeds(file: StaticString = #filePath, line: UInt = #line) {
        let (s, c) = handshake()
        XCTAssertEqual(s, .done, "server", file: file, line: line)
        XCTAssertEqual(c, .done, "client", file: file, line: line)
    }

    /// Everything `connection` can read now, and the result that stopped it.
    static func readAvailable(_ connection: TLSConnection, limit: Int = .max) -> (bytes: [UInt8], stop: TLSRead) {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while out.count < limit {
            let r = buffer.withUnsafeMutableBytes { connection.read(into: $0) }
            guard case .bytes(let n) = r else { return (out, r) }
            out.append(contentsOf: buffer[0..<n])
        }
        return (out, .wantRead)
    }

    /// Sends `toServer` from the client and `toClient` from the server at the same time, each writer
    /// going as far as the socket lets it, then each reader draining; returns what each side received
    /// and the largest single write either side saw accepted.
    func exchange(toServer: [UInt8], toClient: [UInt8]) -> (atServer: [UInt8], atClient: [UInt8], largestWrite: Int, partialWrites: Int) {
        var sentToServer = 0
        var sentToClient = 0
        var atServer: [UInt8] = []
        var atClient: [UInt8] = []
        var largest = 0
        var partial = 0
        func pump(_ connection: TLSConnection, _ data: [UInt8], _ sent: inout Int) {
            while sent < data.count {
                let r = data.withUnsafeBytes { connection.write(UnsafeRawBufferPointer(rebasing: $0[sent...])) }
                guard case .wrote(let n) = r else { return }
                if n < data.count - sent { partial += 1 }
                largest = max(largest, n)
                sent += n
            }
        }
        for _ in 0..<10_000 {
            pump(client, toServer, &sentToServer)
            pump(server, toClient, &sentToClient)
            atServer += TLSPair.readAvailable(server).bytes
            atClient += TLSPair.readAvailable(client).bytes
            if atServer.count >= toServer.count && atClient.count >= toClient.count { break }
        }
        return (atServer, atClient, largest, partial)
    }

    /// One short message each way (this also delivers TLS 1.3 tickets to the client).
    func ping(file: StaticString = #filePath, line: UInt = #line) {
        let result = exchange(toServer: Array("ping".utf8), toClient: Array("pong".utf8))
        XCTAssertEqual(String(decoding: result.atServer, as: UTF8.self), "ping", file: file, line: line)
        XCTAssertEqual(String(decoding: result.atClient, as: UTF8.self), "pong", file: file, line: line)
    }
}

extension TLSIOResult {
    /// Whether this is `.failed` with a reason containing `text`.
    func failed(containing text: String) -> Bool {
        if case .failed(let reason) = self { return reason.contains(text) }
        return false
    }
}
