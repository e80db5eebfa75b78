@testable import GatewayIO
import GatewayTestSupport
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `Socket.accept` (accept4(2)): nil when nothing is pending, an accepted descriptor that is already
/// non-blocking and close-on-exec with the peer's address, and an errno for a descriptor that is not
/// a listener.
final class SocketAcceptTests: XCTestCase {
    func testAcceptedDescriptorIsNonBlockingAndCloseOnExecWithThePeerAddress() throws {
        let listener = try Socket.listen(on: try SocketAddress.resolve(host: "127.0.0.1", port: 0, passive: true), backlog: 8)
        defer { close(listener) }
        let port = try XCTUnwrap(Socket.localAddress(listener).port)

        guard case .success(nil) = Socket.accept(listener) else {
            return XCTFail("nothing is pending yet: accept answers nil")
        }

        let client = try LoopbackSocket.connect(port: port)
        defer { close(client) }
        var accepted: (Int32, SocketAddress)?
        waitFor("the pending connection", timeout: 10) {
            if case .success(let pair?) = Socket.accept(listener) { accepted = pair }
            return accepted != nil
        }
        let (fd, peer) = try XCTUnwrap(accepted)
        defer { close(fd) }
        XCTAssertNotEqual(fcntl(fd, F_GETFL) & O_NONBLOCK, 0, "non-blocking from accept4, without fcntl")
        XCTAssertNotEqual(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0, "close-on-exec from accept4")
        XCTAssertEqual(peer.family, AF_INET)
        XCTAssertEqual(peer.port, Socket.localAddress(client).port, "the peer address is the client's")

        var byte: UInt8 = 0
        XCTAssertEqual(recv(fd, &byte, 1, 0), -1, "a read with nothing sent does not block")
        XCTAssertTrue(errno == EAGAIN || errno == EWOULDBLOCK)
    }

    func testANonListeningDescriptorIsAnErrno() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        XCTAssertGreaterThanOrEqual(fd, 0)
        defer { close(fd) }
        guard case .failure(let failure) = Socket.accept(fd) else {
            return XCTFail("accept on a socket that does not listen must fail")
        }
        XCTAssertEqual(failure.errno, EINVAL)
        XCTAssertEqual(failure.call, "accept")
    }
}
