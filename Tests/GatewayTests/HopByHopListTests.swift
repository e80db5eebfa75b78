@testable import GatewayConfig
import GatewayHTTP
import XCTest

/// The hop-by-hop list lives once, in `GatewayHTTP.HopByHop.fieldNames` (what the running proxy never
/// forwards). GatewayConfig cannot import GatewayHTTP (DESIGN.md section 6), so its copy, used to
/// refuse such names in `bind_headers` and `headers`, must stay equal to it.
final class HopByHopListTests: XCTestCase {
    func testConfigurationRefusesExactlyTheFieldsTheProxyDrops() {
        XCTAssertEqual(HTTPSyntax.hopByHopAndFraming, Set(HopByHop.fieldNames))
        XCTAssertEqual(HopByHop.fieldNames.count, Set(HopByHop.fieldNames).count, "no name listed twice")
        XCTAssertTrue(HopByHop.fieldNames.allSatisfy { $0 == $0.lowercased() })
    }
}
