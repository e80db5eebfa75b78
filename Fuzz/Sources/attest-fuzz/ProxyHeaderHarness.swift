import GatewayHTTP

/// `proxy-header`: `ProxyProtocolHeader.parse` (PROXY protocol v1/v2) on the first bytes of a
/// connection. Input: the bytes as they arrive.
///
/// Invariants: a complete header has a length within the input (at most 107 for v1, 16 + its length
/// field for v2), parses again identically from exactly its bytes and from its bytes followed by
/// anything (it never depends on what follows), and every proper prefix of it is `incomplete`; a
/// source comes with a destination; an `incomplete` input stays `incomplete` or becomes complete or
/// invalid when bytes are added, and every prefix of it is `incomplete` too; an `invalid` input stays
/// invalid whatever is appended.
enum ProxyHeaderHarness {
    static let harness = Harness(name: "proxy-header", summary: "ProxyProtocolHeader.parse: prefix-closed, never past the header") { run($0) }

    static func run(_ input: [UInt8]) {
        let h = "proxy-header"
        let result = ProxyProtocolHeader.parse(input)
        switch result {
        case .complete(let header, let length):
            Invariant.check(length > 0 && length <= input.count, h, "length \(length) of \(input.count) bytes")
            Invariant.check(header.version == 1 || header.version == 2, h, "version \(header.version)")
            if header.version == 1 { Invariant.check(length <= ProxyProtocolHeader.maximumV1Length, h, "v1 of \(length) bytes") }
            Invariant.check((header.source == nil) == (header.destination == nil), h, "source without destination")
            let exact = Array(input[..<length])
            Invariant.check(ProxyProtocolHeader.parse(exact) == result, h, "the header alone parses differently")
            Invariant.check(ProxyProtocolHeader.parse(exact + [0x47, 0x0D, 0x0A, 0x00]) == result, h, "what follows changed the result")
            for k in stride(from: 0, to: length, by: max(1, length / 16)) {
                Invariant.check(ProxyProtocolHeader.parse(Array(exact[..<k])) == .incomplete, h, "prefix \(k) of a header is not incomplete")
            }
        case .incomplete:
            Invariant.check(input.count < 16 + 65536, h, "incomplete after \(input.count) bytes")
            for k in stride(from: 0, to: input.count, by: max(1, input.count / 16)) {
                Invariant.check(ProxyProtocolHeader.parse(Array(input[..<k])) == .incomplete, h, "prefix \(k) of an incomplete input is not")
            }
        case .invalid:
            for tail: [UInt8] in [[0x0D, 0x0A], [0x20], Array(repeating: 0, count: 64)] {
                if case .invalid = ProxyProtocolHeader.parse(input + tail) { continue }
                Invariant.fail(h, "an invalid input became valid with more bytes")
            }
        }
    }

    /// Hand-written seeds: v1 lines and v2 headers, valid and broken.
    static var seeds: [(String, [UInt8])] {
        let inet: [UInt8] = [203, 0, 113, 7, 192, 0, 2, 1, 0x1F, 0x90, 0x01, 0xBB]
        func v2(_ command: UInt8, _ family: UInt8, _ body: [UInt8]) -> [UInt8] {
            ProxyProtocolHeader.v2Signature + [command, family, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
        }
        return [
            ("v1-tcp4", Array("PROXY TCP4 203.0.113.7 192.0.2.1 56324 443\r\nGET / HTTP/1.1\r\n".utf8)),
            ("v1-tcp6", Array("PROXY TCP6 2001:db8::7 2001:db8::1 0 65535\r\n".utf8)),
            ("v1-unknown", Array("PROXY UNKNOWN ffff::1 ffff::2 1 2\r\n".utf8)),
            ("v1-partial", Array("PROXY TCP4 203.0.113".utf8)),
            ("v1-bad-port", Array("PROXY TCP4 203.0.113.7 192.0.2.1 01 2\r\n".utf8)),
            ("v2-inet-tlvs", v2(0x21, 0x11, inet + [0x01, 0x00, 0x02, 0x68, 0x32, 0x04, 0x00, 0x00])),
            ("v2-local", v2(0x20, 0x00, [])),
            ("v2-inet6", v2(0x21, 0x21, [UInt8](repeating: 1, count: 36))),
            ("v2-unix", v2(0x21, 0x31, [UInt8](repeating: 0x2F, count: 216))),
            ("v2-tlv-overrun", v2(0x21, 0x11, inet + [0x04, 0x00, 0x09])),
            ("v2-partial", Array(v2(0x21, 0x11, inet).prefix(20))),
        ]
    }
}
