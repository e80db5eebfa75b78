import XCTest
@testable import GatewayHTTP

final class HTTPTargetPolicyTests: XCTestCase {
    private func check(_ target: String, _ policy: HTTPTargetPolicy = HTTPTargetPolicy()) -> Result<Int, HTTPError> {
        do throws(HTTPError) { return .success(try policy.validate(target)) } catch { return .failure(error) }
    }

    private func refused(_ target: String, _ error: HTTPError, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(check(target), .failure(error), target, file: file, line: line)
    }

    func testAcceptedTargets() {
        let ok: [(String, Int)] = [
            ("/", 1), ("/a", 2), ("/a/", 3), ("/a/b.c/d", 8), ("/a?", 2), ("/a?x=1&y", 2),
            ("/.well-known/x", 14), ("/a..b/...", 9), ("/%20x", 5), ("/a%3Ab", 6), ("/%25", 4),
            ("/a:b@c!$&'()*+,=", 16), ("/?q=//../%2F%zz%41", 1), ("/a?b?c", 2), ("/~user/-_", 9),
        ]
        for (target, pathLength) in ok {
            XCTAssertEqual(check(target), .success(pathLength), target)
        }
    }

    func testEmptySegments() {
        refused("//", .targetEmptySegment)
        refused("//a", .targetEmptySegment)
        refused("/a//b", .targetEmptySegment)
        refused("/a//", .targetEmptySegment)
        refused("/a//?x", .targetEmptySegment)
    }

    func testDotSegments() {
        for t in ["/.", "/..", "/./a", "/../a", "/a/.", "/a/..", "/a/./b", "/a/../b", "/a/..?x", "/.?x"] {
            refused(t, .targetDotSegment)
        }
    }

    func testEncodedUnreservedAndSeparators() {
        for t in ["/%41", "/a%2E", "/%2E%2E/x", "/%7E", "/%5F", "/%30", "/%2D"] {
            refused(t, .targetEncodedUnreserved)
        }
        for t in ["/a%2Fb", "/%5C", "/%00", "/%0A", "/%7F"] {
            refused(t, .targetEncodedSeparator)
        }
        refused("/a%2fb", .targetLowercaseEscape)
        refused("/%3a", .targetLowercaseEscape)
        refused("/%2e", .targetLowercaseEscape)
    }

    func testBadEscapes() {
        for t in ["/%", "/%4", "/%G1", "/a%", "/a%1?x", "/%%41", "/%4 "] {
            refused(t, .targetBadEscape)
        }
    }

    func testBadBytes() {
        for t in ["/a\\b", "/a b", "/\"", "/{x}", "/a|b", "/a^", "/a`", "/[x]", "/\u{7F}", "/é", "/a\tb", "/a#frag", "/a?b#c", "/a?b c"] {
            refused(t, .targetBadByte)
        }
    }

    func testOtherForms() {
        refused("*", .targetNotOriginForm)
        refused("http://example.com/a", .targetNotOriginForm)
        refused("example.com:443", .targetNotOriginForm)
        refused("a/b", .targetNotOriginForm)
        refused("", .badRequestLine)
    }

    func testSemicolon() {
        refused("/admin;x/secret", .targetPathParameter)
        XCTAssertEqual(check("/a;b=c", HTTPTargetPolicy(allowSemicolonInPath: true)), .success(6))
        XCTAssertEqual(check("/a?x;y"), .success(2))  // the query is not a path
    }
}
