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

    func testARepeatedNameDiffersFromTheParsedCount() throws {
        for text in [#"{"a":"1","a":"2"}"#, #"{"a":"1","\u0061":"2"}"#] {
            let parsed = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            XCTAssertEqual(parsed.count, 1, text)
            XCTAssertEqual(members(text), 2, text)
        }
    }
}
