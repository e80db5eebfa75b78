@testable import GatewayIO
import XCTest

/// `OutputBuffer.flush(using:)`: the writer-agnostic flush that TLS and `ByteStream` use.
final class OutputBufferFlushTests: XCTestCase {
    func testFlushOffersTheSameBytesAgainAfterAStop() {
        var buffer = OutputBuffer()
        buffer.append(Array("hello world".utf8))
        var offered: [String] = []
        var budget = [3, 0]
        let first = buffer.flush { bytes -> Result<Int, Socket.Failure> in
            offered.append(String(decoding: bytes, as: UTF8.self))
            return .success(budget.removeFirst())
        }
        XCTAssertEqual(offered, ["hello world", "lo world"])
        guard case .wouldBlock = first.result else { return XCTFail("\(first.result)") }
        XCTAssertEqual(first.written, 3)
        XCTAssertEqual(buffer.count, 8)

        buffer.append("!" as StaticString)
        offered = []
        let second = buffer.flush { bytes -> Result<Int, Socket.Failure> in
            offered.append(String(decoding: bytes, as: UTF8.self))
            return .success(bytes.count)
        }
        XCTAssertEqual(offered, ["lo world!"], "the same prefix, with the newer bytes after it")
        guard case .done = second.result else { return XCTFail() }
        XCTAssertEqual(second.written, 9)
        XCTAssertTrue(buffer.isEmpty)
    }

    func testFlushStopsOnFailureAndOnZero() {
        var buffer = OutputBuffer()
        buffer.append(Array("abc".utf8))
        let failed = buffer.flush { _ in .failure(Socket.Failure(call: "send", errno: 32)) }
        guard case .failed(32) = failed.result else { return XCTFail() }
        XCTAssertEqual(buffer.count, 3, "nothing is dropped")
        let zero = buffer.flush { _ in .success(0) }
        guard case .wouldBlock = zero.result else { return XCTFail() }
        XCTAssertEqual(buffer.count, 3)
        var calls = 0
        var empty = OutputBuffer()
        let done = empty.flush { _ -> Result<Int, Socket.Failure> in calls += 1; return .success(1) }
        guard case .done = done.result else { return XCTFail() }
        XCTAssertEqual(calls, 0, "an empty buffer is done without writing")
    }
}
