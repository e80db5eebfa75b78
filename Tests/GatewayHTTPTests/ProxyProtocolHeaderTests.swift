@testable import GatewayHTTP
import XCTest

/// The PROXY protocol parser (`ProxyProtocolHeader`): crafted v1 lines and v2 binary headers, valid,
/// incomplete and malformed, TLVs skipped, LOCAL / UNKNOWN / UNSPEC without an address, and never a
/// byte read past the header.
final class ProxyProtocolHeaderTests: XCTestCase {
    private func parse(_ text: String) -> ProxyProtocolHeader.ParseResult { ProxyProtocolHeader.parse(Array(text.utf8)) }

    private func isInvalid(_ r: ProxyProtocolHeader.ParseResult) -> Bool {
        if case .invalid = r { return true }
        return false
    }

    /// A v2 header: signature, version/command, family/transport, length, then `body`.
    private func v2(command: UInt8 = 0x21, family: UInt8 = 0x11, body: [UInt8], length: Int? = nil) -> [UInt8] {
        let n = length ?? body.count
        return ProxyProtocolHeader.v2Signature + [command, family, UInt8(n >> 8), UInt8(n & 0xFF)] + body
    }

    private let inet: [UInt8] = [203, 0, 113, 7, 192, 0, 2, 1, 0x1F, 0x90, 0x01, 0xBB]  // 203.0.113.7:8080 -> 192.0.2.1:443

    // MARK: version 1

    func testV1TCP4AndTCP6AndUnknown() {
        let line = "PROXY TCP4 203.0.113.7 192.0.2.1 56324 443\r\n"
        XCTAssertEqual(parse(line + "GET / HTTP/1.1\r\n"),
                       .complete(ProxyProtocolHeader(version: 1, source: "203.0.113.7:56324", destination: "192.0.2.1:443"),
                                 length: line.utf8.count), "the length stops at the CRLF, whatever follows")
        XCTAssertEqual(parse("PROXY TCP6 2001:DB8:0:0::7 2001:db8::1 0 65535\r\n"),
                       .complete(ProxyProtocolHeader(version: 1, source: "[2001:db8::7]:0", destination: "[2001:db8::1]:65535"), length: 48))
        XCTAssertEqual(parse("PROXY UNKNOWN\r\n"), .complete(ProxyProtocolHeader(version: 1, source: nil, destination: nil), length: 15))
        XCTAssertEqual(parse("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n\u{16}"),
                       .complete(ProxyProtocolHeader(version: 1, source: nil, destination: nil), length: 35))
    }

    func testV1PrefixesAreIncomplete() {
        let line = "PROXY TCP4 203.0.113.7 192.0.2.1 56324 443\r\n"
        for n in 1..<line.utf8.count {
            XCTAssertEqual(ProxyProtocolHeader.parse(Array(line.utf8.prefix(n))), .incomplete, "prefix of \(n)")
        }
    }

    func testV1Malformed() {
        let bad = [
            "GET / HTTP/1.1\r\n",                                   // no header at all
            "proxy TCP4 203.0.113.7 192.0.2.1 1 2\r\n",             // lower case
            "PROXY  TCP4 203.0.113.7 192.0.2.1 1 2\r\n",            // double space
            "PROXY TCP4 203.0.113.7 192.0.2.1 1 2 \r\n",            // trailing space
            "PROXY TCP4 203.0.113.7 192.0.2.1 1\r\n",               // a field missing
            "PROXY TCP5 203.0.113.7 192.0.2.1 1 2\r\n",             // protocol
            "PROXY TCP4 2001:db8::1 192.0.2.1 1 2\r\n",             // family mismatch
            "PROXY TCP6 203.0.113.7 2001:db8::1 1 2\r\n",
            "PROXY TCP4 203.0.113.256 192.0.2.1 1 2\r\n",           // not an address
            "PROXY TCP4 203.0.113.07 192.0.2.1 1 2\r\n",            // leading zero in an octet
            "PROXY TCP4 203.0.113.7 192.0.2.1 01 2\r\n",            // leading zero in a port
            "PROXY TCP4 203.0.113.7 192.0.2.1 65536 2\r\n",         // port range
            "PROXY TCP4 203.0.113.7 192.0.2.1 -1 2\r\n",
            "PROXY TCP4 203.0.113.7 192.0.2.1 1 2\n",               // bare LF
            "PROXY TCP4 203.0.113.7 192.0.2.1 1 2\rX",              // CR without LF
            "PROXY TCP4 203.0.113.7\t192.0.2.1 1 2\r\n",            // control byte
            "PROXY UNKNOWN " + String(repeating: "x", count: 100) + "\r\n",  // longer than 107
        ]
        for text in bad { XCTAssertTrue(isInvalid(parse(text)), text.debugDescription) }
        XCTAssertTrue(isInvalid(parse("PROXY UNKNOWN " + String(repeating: "x", count: 93))), "107 bytes without CRLF")
        XCTAssertEqual(parse("PROXY UNKNOWN " + String(repeating: "x", count: 92)), .incomplete, "106 bytes may still end")
    }

    // MARK: version 2

    func testV2InetInet6AndTLVsSkipped() {
        let tlvs: [UInt8] = [0x01, 0x00, 0x02, 0x68, 0x32, 0x04, 0x00, 0x00, 0xEA, 0x00, 0x03, 1, 2, 3]  // ALPN "h2", NOOP empty, custom
        let header = v2(body: inet + tlvs)
        XCTAssertEqual(ProxyProtocolHeader.parse(header + Array("GET".utf8)),
                       .complete(ProxyProtocolHeader(version: 2, source: "203.0.113.7:8080", destination: "192.0.2.1:443"),
                                 length: header.count))
        var v6 = [UInt8](repeating: 0, count: 36)
        v6[0] = 0x20; v6[1] = 0x01; v6[2] = 0x0D; v6[3] = 0xB8; v6[15] = 7
        v6[16] = 0x20; v6[17] = 0x01; v6[18] = 0x0D; v6[19] = 0xB8; v6[31] = 1
        v6[32] = 0xC0; v6[33] = 0x00; v6[34] = 0x01; v6[35] = 0xBB
        XCTAssertEqual(ProxyProtocolHeader.parse(v2(family: 0x21, body: v6)),
                       .complete(ProxyProtocolHeader(version: 2, source: "[2001:db8::7]:49152", destination: "[2001:db8::1]:443"),
                                 length: 52))
    }

    func testV2LocalUnspecAndUnixCarryNoAddress() {
        let none = ProxyProtocolHeader(version: 2, source: nil, destination: nil)
        XCTAssertEqual(ProxyProtocolHeader.parse(v2(command: 0x20, family: 0x00, body: [])), .complete(none, length: 16))
        XCTAssertEqual(ProxyProtocolHeader.parse(v2(command: 0x20, family: 0x11, body: inet)), .complete(none, length: 28),
                       "LOCAL ignores the address block")
        XCTAssertEqual(ProxyProtocolHeader.parse(v2(family: 0x00, body: [])), .complete(none, length: 16))
        XCTAssertEqual(ProxyProtocolHeader.parse(v2(family: 0x31, body: [UInt8](repeating: 0x2F, count: 216))), .complete(none, length: 232))
    }

    func testV2PrefixesAreIncomplete() {
        let header = v2(body: inet + [0x04, 0x00, 0x01, 0x00])
        for n in 1..<header.count {
            XCTAssertEqual(ProxyProtocolHeader.parse(Array(header.prefix(n))), .incomplete, "prefix of \(n)")
        }
    }

    func testV2Malformed() {
        var wrongSignature = v2(body: inet)
        wrongSignature[11] = 0x0B
        let bad: [(String, [UInt8])] = [
            ("signature", wrongSignature),
            ("version 1 in a binary header", v2(command: 0x11, body: inet)),
            ("version 3", v2(command: 0x31, body: inet)),
            ("command 2", v2(command: 0x22, body: inet)),
            ("datagram", v2(family: 0x12, body: inet)),
            ("family 4", v2(family: 0x41, body: inet)),
            ("transport 3", v2(family: 0x13, body: inet)),
            ("address block longer than the length", v2(body: Array(inet.prefix(11)))),
            ("INET6 block in 12 bytes", v2(family: 0x21, body: inet)),
            ("UNSPEC family with STREAM", v2(family: 0x01, body: [])),
            ("TLV overruns", v2(body: inet + [0x04, 0x00, 0x05, 1, 2])),
            ("truncated TLV header", v2(body: inet + [0x04, 0x00])),
        ]
        for (what, bytes) in bad { XCTAssertTrue(isInvalid(ProxyProtocolHeader.parse(bytes)), what) }
    }
}
