@testable import Gateway
import XCTest

/// `JSONMemberCount`: the members of a top-level object as written, so that a repeated name (which
/// `JSONSerialization` folds into one key) is seen.
final class JSONMemberCountTests: XCTestCase {
    private func members(_ text: String) -> Int { JSONMemberCount.topLevelMembers(Array(text.utf8)) }

    func testCountsTopLevelMembersOnly() {
        XCTAssertEqual(members("{}"), 0)
        XCTAssertEqual(members(#"{"a":"1"}"#), 1)
        XCTAssertEqual(members(#"{"a":"1","b":{"c":"2","d":[{"e":3}]},"f":[1,2]}"#), 3, "nested members are not counted")
        XCTAssertEqual(members(#"{ "a" : "x:y", "b:c" : "{[" }"#), 2, "colons and brackets inside strings are text")
        XCTAssertEqual(members(#"{"a":"q\"\\","b":"\\\"x:"}"#), 2, "escaped quotes and backslashes end no string early")
        XCTAssertEqual(members(#"{"a":1,"a":2}"#), 2, "a repeated name is counted twice")
    }

    /// A repeated name in a nested object (`/register`'s `appAttest`, `deviceKey`) counts too; equal
    /// names in different objects are no repetition.
    func testARepeatedNameAtAnyDepthIsSeen() throws {
        func repeats(_ text: String) throws -> Bool {
            let parsed = try JSONSerialization.jsonObject(with: Data(text.utf8))
            return JSONMemberCount.repeatsAName(Array(text.utf8), parsed: parsed)
        }
        XCTAssertFalse(try repeats(#"{"a":"1","b":{"a":"2","c":[{"a":3},{"a":4}]}}"#))
        XCTAssertTrue(try repeats(#"{"a":"1","a":"2"}"#))
        XCTAssertTrue(try repeats(#"{"appAttest":{"keyId":"bogus","keyId":"real","assertion":"x"}}"#))
        XCTAssertTrue(try repeats(#"{"b":[{"c":1,"c":2}]}"#), "in an object inside an array, another escape")
        XCTAssertFalse(try repeats(#"{"a":"x:y","b":["{:}"]}"#), "colons inside strings are text")
    }

    /// Endpoint bodies must be UTF-8 without a BOM (RFC 8259 section 8.1): `JSONSerialization` takes
    /// UTF-16 and UTF-32 too, where the member count cannot see a repeated name (probe: a UTF-16LE
    /// `/register` body with two `appId`s was accepted, the second one stored). Both body parsers
    /// refuse them as `json_invalid`.
    func testEndpointBodiesMustBeUTF8WithoutBOM() throws {
        // The probe's body: characters whose low byte is `"` or `:` (U+4122, U+3A22) throw a byte
        // scanner off, so the repeated `purpose` went unseen in UTF-16LE.
        let text = "{\"x\":\"\",\"purpose\":\"attest\",\"purpose\":\"assert\",\"y\":\"\u{4122}\",\"keyId\":\"k\",\"z\":\"\u{4122}\u{3a22}\"}"
        XCTAssertTrue(JSONMemberCount.isUTF8WithoutBOM(Array(text.utf8)))
        var utf16 = [UInt8]()
        for unit in text.utf16 { utf16 += [UInt8(unit & 0xFF), UInt8(unit >> 8)] }
        XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(utf16)), "Foundation parses UTF-16LE")
        XCTAssertFalse(JSONMemberCount.isUTF8WithoutBOM(utf16))
        XCTAssertFalse(JSONMemberCount.isUTF8WithoutBOM([0xEF, 0xBB, 0xBF] + Array(#"{"a":"1"}"#.utf8)), "a BOM")
        XCTAssertFalse(JSONMemberCount.isUTF8WithoutBOM([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x7D]), "invalid UTF-8")
        XCTAssertThrowsError(try EndpointRequest(body: utf16), "EndpointRequest refuses UTF-16")
        XCTAssertThrowsError(try RegistrationBody(utf16, sha256: { $0 }), "RegistrationBody refuses UTF-16")
        XCTAssertNoThrow(try EndpointRequest(body: Array(#"{"keyId":"k","purpose":"attest"}"#.utf8)))
    }

    func testARepeatedNameDiffersFromTheParsedCount() throws {
        for text in [#"{"a":"1","a":"2"}"#, #"{"a":"1","\u0061":"2"}"#] {
            let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            XCTAssertEqual(parsed.count, 1, text)
            XCTAssertEqual(members(text), 2, text)
        }
    }
}
