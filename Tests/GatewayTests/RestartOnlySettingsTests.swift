@testable import Gateway
import GatewayConfig
import XCTest

/// `RestartOnlySettings`: what a reload cannot apply is named in `restart_required`, never silently
/// ignored (README "Signals, reload and handover"). The risk settings have their own case in
/// `ReceiptRefreshUnitTests`; the reload itself is tested end to end in `ConfigReloadTests`.
final class RestartOnlySettingsTests: XCTestCase {
    /// A listener's `proxy_protocol` and `admin.ready_requires_store` are built in at start: a reload
    /// that changes them names them in `restart_required` (they were silently ignored).
    func testProxyProtocolAndReadinessRuleAreRestartOnly() throws {
        func config(proxy: Bool, ready: Bool) throws -> GatewayConfiguration {
            try GatewayConfiguration.parse(yaml: """
                listen: [{address: 127.0.0.1:8080, proxy_protocol: \(proxy)}]
                admin: {address: 127.0.0.1:8090, ready_requires_store: \(ready)}
                store: memory
                apps:
                  - app_id: ABCDE12345.com.example.app
                upstreams:
                  app: http://127.0.0.1:8081
                routes:
                  - path_prefix: /
                    upstream: app
                """, baseDirectory: "/tmp").configuration
        }
        let started = try config(proxy: false, ready: false)
        XCTAssertEqual(RestartOnlySettings.changes(from: started, to: try config(proxy: false, ready: false)), [])
        XCTAssertEqual(RestartOnlySettings.changes(from: started, to: try config(proxy: true, ready: false)), ["listen[0].proxy_protocol"])
        XCTAssertEqual(RestartOnlySettings.changes(from: started, to: try config(proxy: false, ready: true)), ["admin.ready_requires_store"])
        XCTAssertEqual(RestartOnlySettings.changes(from: try config(proxy: true, ready: true), to: started),
                       ["listen[0].proxy_protocol", "admin.ready_requires_store"])
    }
}
