import GatewayRules
import XCTest
@testable import GatewayHTTP

/// The proxy core answers each normal-form breach (`GatewayRules.RequestTargetPolicy`) with its own
/// 400 code, through the parser the server runs.
final class TargetViolationMappingTests: XCTestCase {
    func testEveryRuleHasItsOwnCode() {
        let errors = TargetViolation.Rule.allCases.map { HTTPError(TargetViolation($0, at: 0)) }
        XCTAssertEqual(Set(errors).count, TargetViolation.Rule.allCases.count)
        for (rule, error) in zip(TargetViolation.Rule.allCases, errors) {
            XCTAssertEqual(error.status, 400, "\(rule)")
            if rule != .empty { XCTAssertEqual(error.code, "target_" + rule.rawValue) }
        }
        XCTAssertEqual(HTTPError(TargetViolation(.empty, at: 0)), .badRequestLine)
    }

    func testParserRefusesWithTheRuleCode() {
        let cases: [(String, HTTPError)] = [
            ("/a/../b", .targetDotSegment), ("/a%5Cb", .targetEncodedSeparator), ("/a;b", .targetPathParameter),
            ("*", .targetNotOriginForm), ("/a%2fb", .targetLowercaseEscape),
        ]
        for (target, expected) in cases {
            let outcome = ParserHarness.parseAllWays("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(outcome.error, expected, target)
        }
        let accepted = ParserHarness.parseAllWays("GET /a%3Bb?x;y HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNil(accepted.error)
        XCTAssertEqual(accepted.requests.first?.target, "/a%3Bb?x;y")
    }

    func testHeadFromPartsUsesThePolicy() {
        XCTAssertThrowsError(try HTTPRequestHead(method: .get, target: "/a;b")) { error in
            XCTAssertEqual(error as? HTTPError, .targetPathParameter)
        }
        XCTAssertEqual(try HTTPRequestHead(method: .get, target: "/a;b", policy: RequestTargetPolicy(allowSemicolonInPath: true)).pathLength, 4)
    }
}
