import GatewayRules
import XCTest

/// Every field the running proxy never forwards (`HopByHopFields.names`, the one list) is refused
/// where the configuration names a header that must reach the upstream as sent.
final class HopByHopConfigTests: XCTestCase {
    func testEveryHopByHopFieldIsRefusedAsABoundHeaderInAnyCase() {
        for name in HopByHopFields.names {
            let written = name.uppercased()
            let lines = errorLines(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    bind_headers: [\(written)]"))
            XCTAssertEqual(lines.count, 1, "\(written): \(lines)")
            XCTAssertTrue(lines.first?.contains("\(written) is a hop-by-hop or framing header") ?? false, "\(written): \(lines)")
        }
        XCTAssertNotNil(loadOK(ConfigTestHelpers.minimal(routes: "routes:\n  - path_prefix: /\n    upstream: app\n    bind_headers: [Authorization]")),
                        "an end-to-end field may be bound")
    }
}
