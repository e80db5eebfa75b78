@testable import GatewayIO
import XCTest

/// `TLSServerContext.hostName(inServerNameExtension:)`: the RFC 6066 section 3 body the client hello
/// callback reads the server name from, before OpenSSL's own checks.
final class TLSServerNameExtensionTests: XCTestCase {
    private func body(_ entries: [(UInt8, [UInt8])], listLength: Int? = nil) -> [UInt8] {
        var list: [UInt8] = []
        for (type, name) in entries { list += [type, UInt8(name.count >> 8), UInt8(name.count & 0xFF)] + name }
        let n = listLength ?? list.count
        return [UInt8(n >> 8), UInt8(n & 0xFF)] + list
    }

    private func name(_ bytes: [UInt8]) -> String? {
        bytes.withUnsafeBytes { TLSServerContext.hostName(inServerNameExtension: $0) }
            .map { String(cString: $0) }
    }

    func testTheHostNameEntryIsRead() {
        XCTAssertEqual(name(body([(0, Array("b.test".utf8))])), "b.test")
        XCTAssertEqual(name(body([(7, Array("other".utf8)), (0, Array("a.test".utf8))])), "a.test", "an unknown type is skipped")
        XCTAssertEqual(name(body([(0, Array(repeating: 0x61, count: 255))]))?.count, 255)
        XCTAssertEqual(name(body([(0, Array("b.test.".utf8))])), "b.test", "one trailing dot removed")
        XCTAssertEqual(name(body([(0, Array(".".utf8))])), ".", "a lone dot stays (it matches nothing)")
    }

    func testMalformedBodiesGiveNoName() {
        XCTAssertNil(name([]))
        XCTAssertNil(name([0]))
        XCTAssertNil(name(body([(0, Array("a.test".utf8))], listLength: 3)), "list length disagrees")
        XCTAssertNil(name(body([(0, [])])), "empty name")
        XCTAssertNil(name(body([(0, Array(repeating: 0x61, count: 256))])), "over 255 bytes")
        XCTAssertNil(name(body([(0, Array("a\u{0}b".utf8))])), "NUL inside")
        XCTAssertNil(name(body([(7, Array("other".utf8))])), "no host_name")
        var cut = body([(0, Array("a.test".utf8))])
        cut[4] = 40  // the entry claims more bytes than the list holds
        XCTAssertNil(name(cut))
    }
}
