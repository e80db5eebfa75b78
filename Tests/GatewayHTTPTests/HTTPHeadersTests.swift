import XCTest
@testable import GatewayHTTP

final class HTTPHeadersTests: XCTestCase {
    func testOrderCaseAndLookup() throws {
        var h = try HTTPHeaders([("Content-Type", "a"), ("X-Multi", "1"), ("x-multi", "2"), ("Host", "h")])
        XCTAssertEqual(h.count, 4)
        XCTAssertEqual(h.map(\.name), ["Content-Type", "X-Multi", "x-multi", "Host"])
        XCTAssertEqual(h.first("CONTENT-TYPE"), "a")
        XCTAssertEqual(h.values("X-MULTI"), ["1", "2"])
        XCTAssertEqual(h.count(of: "x-multi"), 2)
        XCTAssertTrue(h.contains("host"))
        XCTAssertFalse(h.contains("hos"))
        XCTAssertEqual(h.firstBytes("host").map(Array.init), Array("h".utf8))
        XCTAssertEqual(h.remove("X-MULTI"), 2)
        XCTAssertEqual(h.map(\.name), ["Content-Type", "Host"])
    }

    func testReplaceOrAdd() throws {
        var h = try HTTPHeaders([("App-Attest-Verdict", "forged"), ("X", "1"), ("app-attest-verdict", "forged2")])
        try h.replaceOrAdd(name: "App-Attest-Verdict", value: "valid")
        XCTAssertEqual(h.values("app-attest-verdict"), ["valid"])
        XCTAssertEqual(h.map(\.name), ["X", "App-Attest-Verdict"])
    }

    func testRemoveByPrefixAnyCaseAllCopies() throws {
        var h = try HTTPHeaders([("App-Attest-Key-Id", "a"), ("APP-ATTEST-VERDICT", "b"), ("Content-Type", "c"),
                                 ("app-attest-x", "d"), ("App-Attes", "e"), ("X-App-Attest-Y", "f")])
        XCTAssertEqual(h.removeAll(namePrefix: "app-attest-"), 3)
        XCTAssertEqual(h.map(\.name), ["Content-Type", "App-Attes", "X-App-Attest-Y"])
        XCTAssertEqual(h.removeAll { $0.nameHasPrefix("x-") }, 1)
        XCTAssertEqual(h.map(\.name), ["Content-Type", "App-Attes"])
        XCTAssertTrue(h[0].nameEquals("content-type"))
    }

    /// The allocation-free filters: nothing changes (and the list is not copied) when nothing matches;
    /// every copy goes, in order, when something does; a shared copy is never changed.
    func testRemoveWhereNameAndInPlaceRemoval() throws {
        let original = try HTTPHeaders([("X-Forwarded-For", "1"), ("Host", "h"), ("x-forwarded-proto", "http"), ("A", "a")])
        var h = original
        XCTAssertEqual(h.removeFields(whereName: { $0.count == 99 }), 0)
        XCTAssertEqual(h, original)
        XCTAssertEqual(h.removeFields(whereName: { $0.count >= 12 && $0[0] | 0x20 == UInt8(ascii: "x") }), 2)
        XCTAssertEqual(h.map(\.name), ["Host", "A"])
        XCTAssertEqual(original.count, 4, "the shared copy is untouched")
        var w = original
        XCTAssertEqual(w.removeAll { $0.nameEquals("host") }, 1)
        XCTAssertEqual(w.map(\.name), ["X-Forwarded-For", "x-forwarded-proto", "A"])
        XCTAssertEqual(w.removeAll { _ in false }, 0)
        XCTAssertEqual(w.count, 3)
    }

    /// `appendTrusted` adds as `add` does (for values the caller made), `reserveAdditional` keeps the
    /// fields and leaves a shared copy alone.
    func testAppendTrustedAndReserve() throws {
        let original = try HTTPHeaders([("Host", "h")])
        var h = original
        h.reserveAdditional(fields: 4, bytes: 64)
        XCTAssertGreaterThanOrEqual(h.slots.capacity, 5)
        XCTAssertGreaterThanOrEqual(h.storage.capacity, h.storage.count + 64)
        h.appendTrusted(name: "X-Forwarded-For", value: "192.0.2.1")
        Array("https".utf8).withUnsafeBytes { h.appendTrusted(name: "X-Forwarded-Proto", value: $0) }
        var added = try HTTPHeaders([("Host", "h")])
        try added.add(name: "X-Forwarded-For", value: "192.0.2.1")
        try added.add(name: "X-Forwarded-Proto", value: "https")
        XCTAssertEqual(h, added)
        XCTAssertEqual(original.count, 1)
    }

    func testInjectionRefused() {
        var h = HTTPHeaders()
        XCTAssertThrowsError(try h.add(name: "X", value: "a\r\nInjected: 1")) { XCTAssertEqual($0 as? HTTPHeaders.FieldError, .invalidValue) }
        XCTAssertThrowsError(try h.add(name: "X\r\nY", value: "a")) { XCTAssertEqual($0 as? HTTPHeaders.FieldError, .invalidName) }
        XCTAssertThrowsError(try h.add(name: "Bad Name", value: "a"))
        XCTAssertThrowsError(try h.add(name: "", value: "a"))
        XCTAssertThrowsError(try h.add(name: "X", value: "nul\u{0}"))
        XCTAssertThrowsError(try h.replaceOrAdd(name: "X", value: "\n"))
        XCTAssertTrue(h.isEmpty, "a refused mutation leaves the list unchanged")
        XCTAssertNoThrow(try h.add(name: "X", value: "tab\tand obs-text \u{e9}"))
    }

    func testManyReplacementsStayCompact() throws {
        var h = HTTPHeaders()
        for i in 0..<10_000 { try h.replaceOrAdd(name: "X-Counter", value: String(repeating: "v", count: 100) + String(i)) }
        XCTAssertEqual(h.count, 1)
        XCTAssertLessThan(h.storage.count, 20_000, "garbage is compacted")
        XCTAssertEqual(h.first("x-counter")?.hasSuffix("9999"), true)
    }

    func testEquality() throws {
        XCTAssertEqual(try HTTPHeaders([("A", "1")]), try HTTPHeaders([("A", "1")]))
        XCTAssertNotEqual(try HTTPHeaders([("A", "1")]), try HTTPHeaders([("a", "1")]))
        var removed = try HTTPHeaders([("B", "2"), ("A", "1")])
        removed.remove("b")
        XCTAssertEqual(removed, try HTTPHeaders([("A", "1")]))
    }

    func testMethodTokens() {
        XCTAssertEqual(HTTPMethod("GET"), .get)
        XCTAssertEqual(HTTPMethod("PROPFIND")?.description, "PROPFIND")
        XCTAssertNil(HTTPMethod("GE T"))
        XCTAssertNil(HTTPMethod(""))
        XCTAssertNotEqual(HTTPMethod("get"), .get, "methods are case-sensitive")
        XCTAssertTrue(HTTPMethod.put.isIdempotent)
        XCTAssertFalse(HTTPMethod.post.isIdempotent)
    }

    func testHexEncoding() {
        var out: [UInt8] = []
        for v in [1, 15, 16, 65536, 0x7fff_ffff_ffff_ffff] {
            out.removeAll()
            HTTP1Syntax.appendHex(v, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(v, radix: 16))
        }
    }

    /// The word-at-a-time field-value test against the byte rule: every byte value at every position
    /// of values of 0 to 24 bytes (so in a word, across words and in the byte-wise tail), on an
    /// otherwise valid value, and random values (valid, obs-text and control bytes mixed).
    func testFieldValueWordTestAgreesWithTheByteRule() {
        func byByte(_ bytes: [UInt8]) -> Bool { bytes.allSatisfy(HTTP1Syntax.isFieldValueByte) }
        var checked = 0
        for length in 0...24 {
            for position in 0..<max(length, 1) where length > 0 {
                for b in 0...255 {
                    var value = [UInt8](repeating: 0x61, count: length)
                    value[position] = UInt8(b)
                    let word = value.withUnsafeBytes { HTTP1Syntax.isFieldValue($0) }
                    XCTAssertEqual(word, byByte(value), "byte \(b) at \(position) of \(length)")
                    checked += 1
                }
            }
        }
        XCTAssertTrue([UInt8]().withUnsafeBytes { HTTP1Syntax.isFieldValue($0) })
        // A DEL or a control byte after an HTAB in the same word, and in the next word.
        for bad: UInt8 in [0x00, 0x0A, 0x0D, 0x1F, 0x7F] {
            for gap in 1...12 {
                var value = [UInt8](repeating: 0x61, count: 20)
                value[1] = 0x09
                value[1 + gap] = bad
                XCTAssertFalse(value.withUnsafeBytes { HTTP1Syntax.isFieldValue($0) }, "\(bad) \(gap) after HTAB")
            }
        }
        var rng = SystemRandomNumberGenerator()
        let alphabet: [UInt8] = [0x00, 0x09, 0x0A, 0x1F, 0x20, 0x41, 0x7E, 0x7F, 0x80, 0xFF]
        for _ in 0..<20_000 {
            let value = (0..<Int.random(in: 0...40, using: &rng)).map { _ in
                Bool.random(using: &rng) ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0x20...0x7E, using: &rng)
            }
            XCTAssertEqual(value.withUnsafeBytes { HTTP1Syntax.isFieldValue($0) }, byByte(value), "\(value)")
        }
        XCTAssertGreaterThan(checked, 70_000)
    }

    /// Fields parsed from lines keep their names and trimmed values (the line is stored in one copy
    /// with its colon and whitespace between the two), through removal and compaction.
    func testParsedFieldLinesKeepNamesAndValues() throws {
        var fields = HTTPHeaders()
        let lines = ["Host: example.com", "X-Empty:", "X-Spaces: \t padded value \t", "Accept:*/*", "X-Tab:\tv"]
        for line in lines {
            var l = line
            XCTAssertNil(l.withUTF8 { HTTP1LineReader.appendField(UnsafeRawBufferPointer($0), to: &fields) }, line)
        }
        XCTAssertEqual(fields.count, 5)
        XCTAssertEqual(fields.map(\.name), ["Host", "X-Empty", "X-Spaces", "Accept", "X-Tab"])
        XCTAssertEqual(fields.first("host"), "example.com")
        XCTAssertEqual(fields.first("x-empty"), "")
        XCTAssertEqual(fields.first("X-Spaces"), "padded value")
        XCTAssertEqual(fields.first("accept"), "*/*")
        XCTAssertEqual(fields.first("x-tab"), "v")
        try fields.replaceOrAdd(name: "Accept", value: "text/plain")
        XCTAssertEqual(fields.first("accept"), "text/plain")
        XCTAssertEqual(fields.first("X-Spaces"), "padded value")
        for bad in ["X-A: a\u{7F}bcdefghijkl", "X-A: abcdefghijklmn\u{01}", "X A: b", "X-A : b", " X-A: b"] {
            var l = bad
            XCTAssertNotNil(l.withUTF8 { HTTP1LineReader.appendField(UnsafeRawBufferPointer($0), to: &fields) }, bad)
        }
        XCTAssertEqual(fields.count, 5, "a refused line adds nothing")
    }

    /// `tchar` (RFC 9110 section 5.6.2) for all 256 byte values, against the grammar's own list.
    func testTcharIsTheRFCSet() {
        let listed = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
        XCTAssertEqual(listed.count, 77)
        for b in 0...255 {
            XCTAssertEqual(HTTP1Syntax.isTchar(UInt8(b)), listed.contains(UInt8(b)), "byte \(b)")
        }
        let name = Array("X-Request-Id: 1".utf8)
        XCTAssertEqual(name.withUnsafeBytes { HTTP1Syntax.tokenLength($0) }, 12)
        XCTAssertEqual([UInt8]().withUnsafeBytes { HTTP1Syntax.tokenLength($0) }, 0)
        XCTAssertEqual(Array("abc\u{80}d".utf8).withUnsafeBytes { HTTP1Syntax.tokenLength($0) }, 3)
    }

    /// The host part of a connection's remote address (`X-Forwarded-For`, rate limits).
    func testRemoteHostOfAddresses() {
        let cases = [("1.2.3.4:5678", "1.2.3.4"), ("[::1]:80", "::1"), ("[2001:db8::7]:443", "2001:db8::7"),
                     ("unix:", "unix"), ("unix:/run/gw.sock", "unix"), ("host", "host"), ("::1", "::1"),
                     ("[bad", "[bad"), ("", "")]
        for (address, host) in cases {
            XCTAssertEqual(HTTPConnectionInfo.host(of: address), host, address)
            XCTAssertEqual(HTTPConnectionInfo(id: 1, remoteAddress: address, localAddress: "l").remoteHost, host, address)
        }
    }
}
