import GatewayRules
import XCTest

/// The request-target normal form (DESIGN.md section 5), rule by rule, with the byte offset of each
/// breach. The same rule serves the running gateway and `check-config` (agreement over real sockets and
/// real YAML: GatewayTests/NormalFormAgreementTests).
final class RequestTargetPolicyTests: XCTestCase {
    private func check(_ target: String, _ policy: RequestTargetPolicy = RequestTargetPolicy()) -> Result<Int, TargetViolation> {
        do throws(TargetViolation) { return .success(try policy.validate(target)) } catch { return .failure(error) }
    }

    private func refused(_ target: String, _ rule: TargetViolation.Rule, at offset: Int? = nil,
                         file: StaticString = #filePath, line: UInt = #line) {
        switch check(target) {
        case .success(let length):
            XCTFail("\(target): accepted (path length \(length)), expected \(rule)", file: file, line: line)
        case .failure(let violation):
            XCTAssertEqual(violation.rule, rule, target, file: file, line: line)
            if let offset { XCTAssertEqual(violation.offset, offset, target, file: file, line: line) }
        }
    }

    func testAcceptedTargets() {
        let ok: [(String, Int)] = [
            ("/", 1), ("/a", 2), ("/a/", 3), ("/a/b.c/d", 8), ("/a?", 2), ("/a?x=1&y", 2),
            ("/.well-known/x", 14), ("/a..b/...", 9), ("/%20x", 5), ("/a%3Ab", 6), ("/%25", 4),
            ("/a:b@c!$&'()*+,=", 16), ("/?q=//../%2F%zz%41", 1), ("/a?b?c", 2), ("/~user/-_", 9),
            ("/%C3%A9", 7), ("/a?x;y", 2),
        ]
        for (target, pathLength) in ok {
            XCTAssertEqual(check(target), .success(pathLength), target)
        }
    }

    func testEmptySegments() {
        refused("//", .emptySegment, at: 1)
        refused("//a", .emptySegment, at: 1)
        refused("/a//b", .emptySegment, at: 3)
        refused("/a//", .emptySegment, at: 3)
        refused("/a//?x", .emptySegment, at: 3)
    }

    func testDotSegments() {
        for t in ["/.", "/..", "/./a", "/../a", "/a/.", "/a/..", "/a/./b", "/a/../b", "/a/..?x", "/.?x"] {
            refused(t, .dotSegment)
        }
        refused("/a/../b", .dotSegment, at: 3)
    }

    func testEncodedUnreservedAndSeparators() {
        for t in ["/%41", "/a%2E", "/%2E%2E/x", "/%7E", "/%5F", "/%30", "/%2D"] {
            refused(t, .encodedUnreserved)
        }
        for t in ["/a%2Fb", "/%5C", "/%00", "/%0A", "/%1F", "/%7F"] {
            refused(t, .encodedSeparator)
        }
        refused("/a%2Fb", .encodedSeparator, at: 2)
        refused("/a%2fb", .lowercaseEscape, at: 2)
        refused("/%3a", .lowercaseEscape)
        refused("/%2e", .lowercaseEscape)
    }

    func testBadEscapes() {
        for t in ["/%", "/%4", "/%G1", "/a%", "/a%1?x", "/%%41", "/%4 "] {
            refused(t, .badEscape)
        }
        refused("/a%1?x", .badEscape, at: 2)
    }

    func testBadBytes() {
        for t in ["/a\\b", "/a b", "/\"", "/{x}", "/a|b", "/a^", "/a`", "/[x]", "/\u{7F}", "/é", "/a\tb", "/a#frag", "/a?b#c", "/a?b c"] {
            refused(t, .badByte)
        }
        refused("/a\\b", .badByte, at: 2)
        refused("/a?b#c", .badByte, at: 4)
    }

    func testOtherForms() {
        refused("*", .notOriginForm, at: 0)
        refused("http://example.com/a", .notOriginForm)
        refused("example.com:443", .notOriginForm)
        refused("a/b", .notOriginForm)
        refused("", .empty)
    }

    func testSemicolon() {
        refused("/admin;x/secret", .pathParameter, at: 6)
        XCTAssertEqual(check("/a;b=c", RequestTargetPolicy(allowSemicolonInPath: true)), .success(6))
        XCTAssertEqual(check("/a?x;y"), .success(2))  // the query is not a path
    }

    /// The first rule broken is reported, left to right.
    func testFirstBreachWins() {
        refused("/a//b/../%41", .emptySegment, at: 3)
        refused("/%41//", .encodedUnreserved, at: 1)
    }

    func testViolationDescription() {
        XCTAssertEqual(TargetViolation(.dotSegment, at: 3).description, "dot_segment at byte 3")
    }
}
