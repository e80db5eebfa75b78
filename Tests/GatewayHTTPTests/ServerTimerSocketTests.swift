import Foundation
import GatewayIO
@testable import GatewayHTTP
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The timeouts over real sockets without waiting for them: the connection's `tick(now:)` is called
/// with a time past the deadline, which checks that the connection hands the clock to its machine and
/// performs what it decides (the rules themselves: `HTTP1ConnectionMachineTests`).
final class ServerTimerSocketTests: XCTestCase {
    private var harness: ProxyHarness!

    override func setUpWithError() throws {
        // Long real timeouts: only the ticks below can make them fire.
        harness = try ProxyHarness(timeouts: HTTPServerTimeouts(headerRead: 60, bodyRead: 60, idle: 60, write: 60, linger: 60))
    }

    override func tearDown() {
        harness?.stop()
        harness = nil
    }

    /// A blocking client socket with a receive timeout.
    private final class Client {
        let fd: Int32
        init(port: UInt16, receiveBuffer: Int32? = nil) throws {
            fd = try LoopbackSocket.connect(port: port, receiveBuffer: receiveBuffer)
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        }
        func send(_ text: String) { _ = text.withCString { write(fd, $0, strlen($0)) } }
        /// Everything until the server closes (or 5 s pass without a byte), and whether it closed.
        func readToEnd() -> (bytes: [UInt8], closed: Bool) {
            var all: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while true {
                let n = Glibc.read(fd, &buffer, buffer.count)
                if n > 0 { all += buffer[0..<n]; continue }
                return (all, n == 0 || errno == ECONNRESET)
            }
        }
        /// At least `count` bytes (or what came before a close or 5 s of silence).
        func read(atLeast count: Int) -> [UInt8] {
            var all: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65536)
            while all.count < count {
                let n = Glibc.read(fd, &buffer, buffer.count)
                guard n > 0 else { break }
                all += buffer[0..<n]
            }
            return all
        }
        deinit { _ = Glibc.close(fd) }
    }

    /// Waits (polling the loops, at most 5 s) until a connection satisfies `condition`.
    private func waitForConnection(_ condition: @escaping (HTTP1ServerConnection) -> Bool,
                                   file: StaticString = #filePath, line: UInt = #line) {
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let found = harness.group.loops.contains { loop in
                loop.queue.sync { loop.allResidents.contains { ($0 as? HTTP1ServerConnection).map(condition) ?? false } }
            }
            if found { return }
            usleep(2000)
        }
        XCTFail("no connection got there", file: file, line: line)
    }

    /// Ticks every connection with the time `seconds` from now.
    private func tick(secondsAhead seconds: Double) {
        for loop in harness.group.loops {
            loop.queue.sync {
                let now = EventLoop.now() &+ UInt64(seconds * 1e9)
                for case let c as HTTP1ServerConnection in loop.allResidents { c.tick(now: now) }
            }
        }
    }

    func testSilentConnectionIsClosedWithoutAnswer() throws {
        let client = try Client(port: harness.port)
        waitForConnection { $0.phase == .idle }
        tick(secondsAhead: 61)
        let r = client.readToEnd()
        XCTAssertTrue(r.closed)
        XCTAssertTrue(r.bytes.isEmpty, String(decoding: r.bytes, as: UTF8.self))
    }

    func testSlowHeadersGet408AndClose() throws {
        let client = try Client(port: harness.port)
        client.send("GET /local/a HTTP/1.1\r\nHost: h\r\n")
        waitForConnection { $0.phase == .head }
        tick(secondsAhead: 30)
        waitForConnection { $0.phase == .head }  // not yet
        tick(secondsAhead: 61)
        let r = client.readToEnd()
        let responses = RawResponse.parseAll(r.bytes)
        XCTAssertEqual(responses.map(\.status), [408], String(decoding: r.bytes, as: UTF8.self))
        XCTAssertEqual(responses.first?.header("X-Error"), "header_timeout")
        XCTAssertEqual(responses.first?.header("Connection"), "close")
        XCTAssertEqual(harness.handler.completed.last?.error, .headerTimeout)
    }

    func testSlowBodyGets408() throws {
        let client = try Client(port: harness.port)
        client.send("POST /local/a HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\nabc")
        waitForConnection { $0.phase == .body }
        tick(secondsAhead: 61)
        let responses = RawResponse.parseAll(client.readToEnd().bytes)
        XCTAssertEqual(responses.map(\.status), [408])
        XCTAssertEqual(responses.first?.header("X-Error"), "body_timeout")
    }

    func testIdleKeepAliveConnectionClosedSilently() throws {
        let client = try Client(port: harness.port)
        client.send("GET /local/a HTTP/1.1\r\nHost: h\r\n\r\n")
        let answer = client.read(atLeast: 1)
        XCTAssertEqual(RawResponse.parseAll(answer).map(\.status), [200])
        waitForConnection { $0.phase == .idle }
        tick(secondsAhead: 61)
        let r = client.readToEnd()
        XCTAssertTrue(r.closed)
        XCTAssertTrue(r.bytes.isEmpty)
    }

    func testClientThatStopsReadingIsCutOffByWriteTimeout() throws {
        let client = try Client(port: harness.port, receiveBuffer: 8192)
        client.send("GET /large?size=33554432 HTTP/1.1\r\nHost: h\r\n\r\n")
        waitForConnection { $0.isWriteBlocked }
        tick(secondsAhead: 61)
        let r = client.readToEnd()
        XCTAssertTrue(r.closed)
        XCTAssertGreaterThan(r.bytes.count, 0)
        XCTAssertLessThan(r.bytes.count, 33554432, "the stalled client was cut off")
        let record = try XCTUnwrap(harness.handler.completed.last)
        XCTAssertTrue(record.aborted)
        XCTAssertEqual(record.status, 200)
        XCTAssertEqual(record.error, .clientStalled, "cut by the server for a client that stopped reading, not a client gone")
    }

    /// A local answer queued whole (4 MiB echoed) to a client that reads none of it: its record waits
    /// for the last byte, and the write timeout reports it cut, not completed.
    func testAQueuedAnswerTheClientNeverReadsIsLoggedCutNotCompleted() throws {
        let client = try Client(port: harness.port, receiveBuffer: 8192)
        let size = 4 << 20
        let body = String(repeating: "b", count: size)
        let request = Array("POST /local/a HTTP/1.1\r\nHost: h\r\nContent-Length: \(size)\r\n\r\n\(body)".utf8)
        let fd = client.fd
        DispatchQueue.global().async {  // the gateway reads the whole body before it answers
            request.withUnsafeBytes { bytes in
                var sent = 0
                while sent < bytes.count {
                    let n = write(fd, bytes.baseAddress! + sent, bytes.count - sent)
                    guard n > 0 else { return }
                    sent += n
                }
            }
        }
        waitForConnection { $0.isWriteBlocked }
        XCTAssertTrue(harness.handler.completed.isEmpty, "not reported while its bytes wait for the client")
        tick(secondsAhead: 61)
        let r = client.readToEnd()
        XCTAssertTrue(r.closed)
        XCTAssertLessThan(r.bytes.count, size, "the stalled client was cut off")
        let record = try XCTUnwrap(harness.handler.completed.last)
        XCTAssertTrue(record.aborted)
        XCTAssertEqual(record.status, 200)
        XCTAssertEqual(record.error, .clientStalled)
        XCTAssertEqual(record.responseBodyBytes, size)
    }
}
