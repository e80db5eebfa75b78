import Gateway
import GatewayConfig
import XCTest

/// `RuntimeEventLevel`: routine results and recoveries are `info`, a stopped receipt refresh is
/// `error`, the rest `warning` (a probe found every `risk_refresh`, even `refreshed`, at `warning`,
/// beside the alert `risk_refresh_stopped`).
final class RuntimeEventLevelTests: XCTestCase {
    func testRoutineResultsAreInfoTroubleIsWarningAndAStoppedRefreshIsError() {
        XCTAssertEqual(RuntimeEventLevel.of("risk_refresh", [("outcome", "refreshed"), ("owner", "a")]), .info)
        XCTAssertEqual(RuntimeEventLevel.of("risk_refresh", [("outcome", "not_modified")]), .info)
        for outcome in ["rejected", "throttled", "unreachable", "invalid_receipt", "not_found", "store_unavailable"] {
            XCTAssertEqual(RuntimeEventLevel.of("risk_refresh", [("outcome", outcome)]), .warning, outcome)
        }
        XCTAssertEqual(RuntimeEventLevel.of("risk_refresh", []), .warning, "no outcome: not routine")
        XCTAssertEqual(RuntimeEventLevel.of("risk_refresh_stopped", [("status", "401")]), .error)
        for name in ["store_recovered", "verdict_keys_recovered", "verdict_key_added", "upstream_resolved", "upstream_dns_changed"] {
            XCTAssertEqual(RuntimeEventLevel.of(name, []), .info, name)
        }
        for name in ["store_unavailable", "upstream_endpoint_ejected", "tls_handshake_failed", "risk_receipt_invalid",
                     "upstream_unresolved", "verdict_keys_restored", "upstream_bad_response"] {
            XCTAssertEqual(RuntimeEventLevel.of(name, []), .warning, name)
        }
    }
}
