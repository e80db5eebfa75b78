@testable import Gateway
import AppAttest
import GatewayConfig
import GatewayRules
import XCTest

/// `SignalCheck`'s metric labels stay short whatever a signing key carries: a probe's 5,000-byte
/// validation category made a 10 KB `attest_gateway_signal_decisions_total` series per value (up to
/// 512 per loop), and an empty value was exported as `none` (which means absent).
final class SignalCheckLabelTests: XCTestCase {
    private let policy = SignalPolicy(validationCategory: .init(allowed: [[1, 0, 0, 0]], action: .monitor),
                                      bundleVersion: .init(minimum: DottedVersion("2")!, action: .monitor))

    private func values(_ category: [UInt8]?, _ version: String?) -> [String] {
        SignalCheck(AuthenticatorSignals(validationCategory: category, bundleVersion: version), policy: policy).decisions.map(\.value)
    }

    func testLabelsAreBoundedAndEmptyIsNotAbsent() {
        XCTAssertEqual(values([1, 0, 0, 0], "3.1"), ["01000000", "3.1"])
        XCTAssertEqual(values(Array(repeating: 0xAB, count: 64), nil), [String(repeating: "ab", count: 64), "none"], "64 bytes: shown")
        XCTAssertEqual(values(Array(repeating: 0xAB, count: 65), String(repeating: "9", count: 33)), ["invalid", "invalid"])
        XCTAssertEqual(values(Array(repeating: 7, count: 5000), "1.0"), ["invalid", "1.0"])
        XCTAssertEqual(values([], ""), ["empty", "empty"], "carried empty, not absent")
        XCTAssertEqual(values(nil, nil), ["none", "none"], "absent")
    }
}
