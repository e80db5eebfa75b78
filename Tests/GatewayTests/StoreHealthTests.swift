@testable import Gateway
import GatewayRedis
import Synchronization
import XCTest

/// `StoreHealth`: one `store_unavailable` line per outage however the connections flap meanwhile, one
/// `store_recovered` line once every connection is ready, the summary word and the metrics.
final class StoreHealthTests: XCTestCase {
    private final class Lines: Sendable {
        let items = Mutex<[(String, [(String, String)])]>([])
        var names: [String] { items.withLock { $0.map(\.0) } }
        func field(_ index: Int, _ key: String) -> String? {
            items.withLock { $0[index].1.first { $0.0 == key }?.1 }
        }
    }

    func testOneLinePerOutageAndRecovery() {
        let lines = Lines()
        let clock = Atomic<UInt64>(1_000_000_000)
        let health = StoreHealth(connections: 3, tracked: true, events: { name, fields in lines.items.withLock { $0.append((name, fields)) } },
                                 now: { clock.load(ordering: .relaxed) })
        XCTAssertEqual(health.summary, .connecting)
        for i in 0..<3 { health.update(connection: i, health: .ready, detail: "") }
        XCTAssertEqual(health.summary, .ok)
        XCTAssertEqual(lines.names, [], "the first connections are no recovery")

        health.update(connection: 1, health: .down, detail: "127.0.0.1:6379: Connection refused")
        XCTAssertEqual(health.summary, .unavailable)
        health.update(connection: 0, health: .down, detail: "connection closed by server")
        health.update(connection: 1, health: .down, detail: "again")
        health.update(connection: 0, health: .ready, detail: "")
        health.update(connection: 0, health: .down, detail: "flap")
        health.update(connection: 2, health: .down, detail: "lost")
        XCTAssertEqual(lines.names, ["store_unavailable"], "one line, whatever happens during the outage")
        XCTAssertEqual(lines.field(0, "connections_down"), "1/3")
        XCTAssertEqual(lines.field(0, "detail"), "127.0.0.1:6379: Connection refused")
        XCTAssertEqual(health.outages, 1)

        clock.store(3_500_000_000, ordering: .relaxed)
        health.update(connection: 0, health: .ready, detail: "")
        health.update(connection: 1, health: .ready, detail: "")
        XCTAssertEqual(lines.names, ["store_unavailable"], "not before every connection is back")
        XCTAssertEqual(health.summary, .unavailable)
        health.update(connection: 2, health: .ready, detail: "")
        XCTAssertEqual(lines.names, ["store_unavailable", "store_recovered"])
        XCTAssertEqual(lines.field(1, "duration_ms"), "2500")
        XCTAssertEqual(health.summary, .ok)

        health.update(connection: 2, health: .down, detail: "second")
        XCTAssertEqual(lines.names, ["store_unavailable", "store_recovered", "store_unavailable"])
        XCTAssertEqual(health.outages, 2)
        let text = health.prometheusText()
        XCTAssertTrue(text.contains("attest_gateway_store_connections{state=\"ready\"} 2\n"), text)
        XCTAssertTrue(text.contains("attest_gateway_store_connections{state=\"down\"} 1\n"), text)
        XCTAssertTrue(text.contains("attest_gateway_store_outages_total 2\n"), text)
        // Closing (shutdown) is no outage.
        for i in 0..<3 { health.update(connection: i, health: .closed, detail: "store closed") }
        XCTAssertEqual(lines.names.count, 3)
    }

    func testUntrackedStoreIsAlwaysOk() {
        let health = StoreHealth(connections: 0, tracked: false, events: { _, _ in XCTFail("no lines") })
        XCTAssertEqual(health.summary, .ok)
        XCTAssertFalse(health.prometheusText().contains("attest_gateway_store_connections"))
        XCTAssertTrue(health.prometheusText().contains("attest_gateway_store_outages_total 0\n"))
    }
}
