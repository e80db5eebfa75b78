@testable import GatewayHTTP
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// Every loop accepts new connections itself (`HTTPLoopAcceptor`); `HTTPServerContext.reserveConnection`
/// keeps `maxConnections` exact across loops and spreads a burst of connections over them.
final class LoopAcceptTests: XCTestCase {
    private func context(maxConnections: Int) -> HTTPServerContext {
        let configuration = HTTPServerConfiguration(listeners: [.tcp(host: "127.0.0.1", port: 0)],
                                                    maxConnections: maxConnections)
        return HTTPServerContext(configuration: configuration, handler: HTTPHandlerCalls(ProxyTestHandler(upstream: nil)))
    }

    func testReservationsKeepTheLimitExactAndGiveBackWhatWasNotAccepted() {
        let context = context(maxConnections: 3)
        XCTAssertEqual(context.reserveConnection(preferred: 0, loops: 2), 0, "the accepting loop keeps it")
        XCTAssertEqual(context.reserveConnection(preferred: 0, loops: 2), 0)
        XCTAssertEqual(context.reserveConnection(preferred: 1, loops: 2), 1)
        XCTAssertNil(context.reserveConnection(preferred: 0, loops: 2), "at max_connections nothing is taken")
        XCTAssertFalse(context.hasCapacity)
        context.cancelReservation(loop: 1)  // accept found nothing after all
        XCTAssertTrue(context.hasCapacity)
        XCTAssertEqual(context.reserveConnection(preferred: 1, loops: 2), 1)
        context.connectionClosed(loop: 0)
        XCTAssertEqual(context.reserveConnection(preferred: 1, loops: 2), 1)
        XCTAssertNil(context.reserveConnection(preferred: 1, loops: 2))
    }

    func testABurstAcceptedByOneLoopIsSpreadOverAll() {
        let context = context(maxConnections: 0)
        var perLoop = [0, 0, 0, 0]
        for _ in 0..<400 {
            let loop = context.reserveConnection(preferred: 2, loops: 4)!
            perLoop[loop] += 1
        }
        XCTAssertLessThanOrEqual(perLoop.max()! - perLoop.min()!, 400 / 4 / 8 + 1, "\(perLoop)")
        XCTAssertGreaterThan(perLoop[2], perLoop.min()!, "the accepting loop keeps its share and the slack")
        // Connections closing on one loop make that loop the one new connections go to.
        for _ in 0..<60 { context.connectionClosed(loop: 0) }
        XCTAssertEqual(context.reserveConnection(preferred: 2, loops: 4), 0)
    }

    /// Real sockets: 24 keep-alive connections opened at once to a 2-loop server all get answers and
    /// live on both loops (the loop that is woken accepts, the least loaded gets the surplus).
    func testKeepAliveConnectionsOpenedTogetherLiveOnBothLoops() throws {
        let harness = try ProxyHarness()
        defer { harness.stop() }
        let clients = try (0..<24).map { _ in try LoopbackSocket.connect(port: harness.port) }
        defer { for fd in clients { close(fd) } }
        let request = Array("GET /local/x HTTP/1.1\r\nHost: h\r\n\r\n".utf8)
        for fd in clients { _ = request.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } }
        for fd in clients {
            var tv = timeval(tv_sec: 5, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = read(fd, &buffer, buffer.count)
            XCTAssertTrue(n > 0 && String(decoding: buffer[0..<n], as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        }
        let started = harness.handler.connectionEvents.filter(\.started).map(\.connection.loopIndex)
        XCTAssertEqual(started.count, 24)
        let onLoop0 = started.filter { $0 == 0 }.count
        XCTAssertGreaterThanOrEqual(onLoop0, 24 / 2 - 3, "loop 0 holds \(onLoop0) of 24")
        XCTAssertGreaterThanOrEqual(24 - onLoop0, 24 / 2 - 3, "loop 1 holds \(24 - onLoop0) of 24")
    }
}
