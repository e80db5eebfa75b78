@testable import GatewayIO
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// The handover's kernel side (`Socket.listen` with `SO_REUSEPORT`, `Socket.steerReusePortGroup`):
/// two listeners share one address, and a steering program sends every new connection to the one
/// it names, whatever the kernel's hash would have chosen; detaching it restores the hash.
final class ReusePortSteeringTests: XCTestCase {
    /// Connects `count` times to `port`, then counts the connections each listener can accept.
    private func distribute(_ count: Int, port: UInt16, over listeners: [Int32]) throws -> [Int] {
        var clients: [Int32] = []
        defer { for fd in clients { close(fd) } }
        for _ in 0..<count { clients.append(try LoopbackSocket.connect(port: port)) }
        return listeners.map { fd in
            var accepted = 0
            while case .success(let (connection, _)?) = Socket.accept(fd) {
                close(connection)
                accepted += 1
            }
            return accepted
        }
    }

    func testASecondListenerBindsTheSameAddressAndSteeringPicksOne() throws {
        let address = try SocketAddress.resolve(host: "127.0.0.1", port: 0, passive: true)
        let first = try Socket.listen(on: address, backlog: 64)
        defer { close(first) }
        let port = try XCTUnwrap(Socket.localAddress(first).port)
        let second = try Socket.listen(on: try SocketAddress.resolve(host: "127.0.0.1", port: port, passive: true), backlog: 64)
        defer { close(second) }
        XCTAssertEqual(Socket.localAddress(second).port, port, "the same address, bound twice (SO_REUSEPORT)")

        XCTAssertTrue(Socket.steerReusePortGroup(first, toIndex: 1))
        XCTAssertEqual(try distribute(40, port: port, over: [first, second]), [0, 40], "every connection to the successor")
        XCTAssertTrue(Socket.steerReusePortGroup(second, toIndex: 0), "the program belongs to the group: any member replaces it")
        XCTAssertEqual(try distribute(40, port: port, over: [first, second]), [40, 0], "and back to the first")
        XCTAssertTrue(Socket.steerReusePortGroup(first, toIndex: 5))
        XCTAssertEqual(try distribute(40, port: port, over: [first, second]).reduce(0, +), 40,
                       "an index past the group's end falls back to the hash: nothing is lost")
        Socket.detachReusePortProgram(second)
    }

    /// A Unix socket has no reuseport group: steering is refused, and a live socket answers the probe.
    func testUnixSocketsAreProbedNotShared() throws {
        let path = NSTemporaryDirectory() + "steer-\(UUID().uuidString.prefix(8)).sock"
        defer { unlink(path) }
        let address = try SocketAddress.unix(path: path)
        let listener = try Socket.listen(on: address, backlog: 4)
        XCTAssertFalse(Socket.steerReusePortGroup(listener, toIndex: 1))
        XCTAssertTrue(try Socket.isListening(unix: address), "something answers")
        close(listener)
        XCTAssertFalse(try Socket.isListening(unix: address), "a stale file: nobody answers")
    }
}
