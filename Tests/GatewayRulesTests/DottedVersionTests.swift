import GatewayRules
import XCTest

/// `DottedVersion`: what `bundle_version.minimum` and `apple_bundle_version_01` are compared as.
final class DottedVersionTests: XCTestCase {
    private func v(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> DottedVersion {
        try XCTUnwrap(DottedVersion(text), "\(text) parses", file: file, line: line)
    }

    func testComparesNumericallyComponentByComponent() throws {
        XCTAssertLessThan(try v("2.9"), try v("2.10"), "numeric, not text order")
        XCTAssertLessThan(try v("2.3"), try v("2.3.1"))
        XCTAssertLessThan(try v("9"), try v("10"))
        XCTAssertLessThan(try v("1.99.99"), try v("2"))
        XCTAssertGreaterThan(try v("3.0.1"), try v("3"))
        XCTAssertFalse(try v("2.10") < v("2.9"), "the failing variant of the first line")
    }

    func testMissingComponentsAreZero() throws {
        XCTAssertEqual(try v("2"), try v("2.0"))
        XCTAssertEqual(try v("2.0.0"), try v("2"))
        XCTAssertEqual(try v("02.3"), try v("2.3"), "leading zeros are the same number")
        XCTAssertFalse(try v("2") < v("2.0.0"))
        XCTAssertNotEqual(try v("2.0.1"), try v("2"))
        XCTAssertEqual(Set([try v("2"), try v("2.0")]).count, 1, "equal versions hash alike")
        XCTAssertEqual(try v("2.3.0").description, "2.3.0", "the text is kept for messages")
    }

    func testRefusesWhatIsNotADottedNumber() {
        for bad in ["", ".", "2.", ".2", "2..3", "2.3-beta", "v2", "2 .3", "-1", "1.2.3.4.5.6.7.8.9", "1234567890123456789", "２"] {
            XCTAssertNil(DottedVersion(bad), "\(bad.debugDescription) must not parse")
        }
        XCTAssertNotNil(DottedVersion("1.2.3.4.5.6.7.8"), "eight components")
        XCTAssertNotNil(DottedVersion("123456789012345678"), "eighteen digits")
    }
}
