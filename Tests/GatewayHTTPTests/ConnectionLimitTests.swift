import Foundation
import GatewayHTTP
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `HTTPServerConfiguration.maxConnections` (`limits.max_connections`): at the limit new connections
/// wait in the accept backlog and are served once an open one closes.
final class ConnectionLimitTests: XCTestCase {
    /// A blocking client socket with a receive timeout.
    private final class Client {
        let fd: Int32
        init(port: UInt16) throws {
            fd = try LoopbackSocket.connect(port: port)
        }
        func send(_ text: String) { _ = text.withCString { write(fd, $0, strlen($0)) } }
        /// What arrives within `seconds` (empty when nothing does).
        func receive(within seconds: Int) -> String {
            var tv = timeval(tv_sec: seconds, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &buffer, buffer.count)
            return n > 0 ? String(decoding: buffer[0..<n], as: UTF8.self) : ""
        }
        func close() { _ = Glibc.close(fd) }
    }

    func testConnectionsBeyondTheLimitWaitUntilOneCloses() throws {
        let harness = try ProxyHarness(maxConnections: 2)
        defer { harness.stop() }
        let request = "GET /local/x HTTP/1.1\r\nHost: h\r\n\r\n"
        let a = try Client(port: harness.port)
        let b = try Client(port: harness.port)
        a.send(request)
        b.send(request)
        XCTAssertTrue(a.receive(within: 5).hasPrefix("HTTP/1.1 200"))
        XCTAssertTrue(b.receive(within: 5).hasPrefix("HTTP/1.1 200"))

        // Both stay open (keep-alive): the third connection is not served...
        let c = try Client(port: harness.port)
        defer { c.close() }
        c.send(request)
        XCTAssertEqual(c.receive(within: 1), "", "a third connection was served while two were open with max 2")
        // ...until one of the first two closes.
        a.close()
        XCTAssertTrue(c.receive(within: 5).hasPrefix("HTTP/1.1 200"))
        b.close()
    }

    func testUnlimitedByDefault() throws {
        let harness = try ProxyHarness()
        defer { harness.stop() }
        let clients = try (0..<20).map { _ in try Client(port: harness.port) }
        for client in clients { client.send("GET /local/x HTTP/1.1\r\nHost: h\r\n\r\n") }
        for client in clients {
            XCTAssertTrue(client.receive(within: 5).hasPrefix("HTTP/1.1 200"))
            client.close()
        }
    }
}
