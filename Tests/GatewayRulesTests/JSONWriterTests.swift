import Foundation
import GatewayRules
import XCTest

/// The one JSON writer (RFC 8259): escaping, numbers, nesting, pretty layout; every output is read back
/// by an independent parser (Foundation's JSONSerialization).
final class JSONWriterTests: XCTestCase {
    private func parsed(_ bytes: [UInt8], file: StaticString = #filePath, line: UInt = #line) -> Any? {
        let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed])
        XCTAssertNotNil(object, "not JSON: \(String(decoding: bytes, as: UTF8.self))", file: file, line: line)
        return object
    }

    func testEscapes() {
        var json = JSONWriter()
        json.beginObject()
        json.field("s", "a\"b\\c\nd\u{01}é")
        json.field("n", Int64(-5))
        json.field("d", 1.5, decimals: 3)
        json.endObject()
        XCTAssertEqual(json.text, "{\"s\":\"a\\\"b\\\\c\\nd\\u0001é\",\"n\":-5,\"d\":1.500}")
        XCTAssertEqual((parsed(json.bytes) as? [String: Any])?["s"] as? String, "a\"b\\c\nd\u{01}é")
    }

    /// Every control character is escaped (none reaches the output raw), every other scalar round-trips.
    func testEveryControlCharacterAndNonASCIIRoundTrips() {
        var text = ""
        for value in 0..<0x20 { text.unicodeScalars.append(Unicode.Scalar(UInt8(value))) }
        text += "\u{7F}\"\\/ é€😀\u{2028}\u{FEFF}"
        let quoted = JSONWriter.quoted(text)
        XCTAssertFalse(quoted.utf8.dropFirst().dropLast().contains { $0 < 0x20 }, quoted)
        XCTAssertTrue(quoted.hasPrefix("\"\\u0000\\u0001"), quoted)
        XCTAssertTrue(quoted.contains("\\b") == false && quoted.contains("\\u0008"), quoted)
        XCTAssertTrue(quoted.contains("\\t") && quoted.contains("\\n") && quoted.contains("\\r"), quoted)
        XCTAssertEqual(parsed(Array(quoted.utf8)) as? String, text)
        XCTAssertEqual(JSONWriter.quoted(""), "\"\"")
        XCTAssertEqual(JSONWriter.quoted("plain"), "\"plain\"")
    }

    /// Keys are escaped like values.
    func testKeysAreEscaped() {
        var json = JSONWriter()
        json.beginObject()
        json.field("k\"\n", true)
        json.endObject()
        XCTAssertEqual(json.text, "{\"k\\\"\\n\":true}")
        XCTAssertEqual((parsed(json.bytes) as? [String: Any])?["k\"\n"] as? Bool, true)
    }

    func testNumbers() {
        var json = JSONWriter()
        json.beginArray()
        json.value(Int64.min)
        json.value(Int.max)
        json.value(0.1)
        json.value(1e-5)
        json.value(-2.0)
        json.value(Double.nan)
        json.value(Double.infinity)
        json.endArray()
        XCTAssertEqual(json.text, "[-9223372036854775808,9223372036854775807,0.1,1e-05,-2.0,null,null]")
        XCTAssertEqual((parsed(json.bytes) as? [Any])?.count, 7)
        XCTAssertEqual(JSONWriter.format(2.0005, decimals: 3), "2.001")
        XCTAssertEqual(JSONWriter.format(-0.0001, decimals: 3), "0.000")
        XCTAssertEqual(JSONWriter.format(-1.25, decimals: 1), "-1.3")
        XCTAssertEqual(JSONWriter.format(7, decimals: 0), "7")
        XCTAssertEqual(JSONWriter.format(.nan, decimals: 3), "null")
    }

    func testNestingCompact() {
        var json = JSONWriter()
        json.beginObject()
        json.beginArray("a")
        json.value("x")
        json.beginObject()
        json.nullField("n")
        json.endObject()
        json.beginArray()
        json.endArray()
        json.nullValue()
        json.endArray()
        json.beginObject("o")
        json.endObject()
        json.field("b", false)
        json.endObject()
        XCTAssertEqual(json.text, "{\"a\":[\"x\",{\"n\":null},[],null],\"o\":{},\"b\":false}")
        XCTAssertNotNil(parsed(json.bytes))
    }

    func testPrettyLayout() {
        var json = JSONWriter(pretty: true)
        json.beginObject()
        json.field("keyId", "k")
        json.beginArray("checks")
        json.value("chain")
        json.value(2)
        json.endArray()
        json.beginArray("empty")
        json.endArray()
        json.beginObject("inner")
        json.field("deleted", true)
        json.endObject()
        json.endObject()
        XCTAssertEqual(json.text, """
            {
              "keyId": "k",
              "checks": [
                "chain",
                2
              ],
              "empty": [],
              "inner": {
                "deleted": true
              }
            }
            """)
        XCTAssertNotNil(parsed(json.bytes))
        var empty = JSONWriter(pretty: true)
        empty.beginObject()
        empty.endObject()
        XCTAssertEqual(empty.text, "{}")
    }
}
