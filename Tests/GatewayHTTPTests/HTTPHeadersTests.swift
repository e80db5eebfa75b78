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

    func testDecimalAndHexEncoding() {
        var out: [UInt8] = []
        for v in [0, 7, 10, 12345, Int.max] {
            out.removeAll()
            HTTP1Syntax.appendDecimal(v, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(v))
        }
        for v in [1, 15, 16, 65536, 0x7fff_ffff_ffff_ffff] {
            out.removeAll()
            HTTP1Syntax.appendHex(v, to: &out)
            XCTAssertEqual(String(decoding: out, as: UTF8.self), String(v, radix: 16))
        }
    }
}
