import Foundation
import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import Synchronization
import XCTest

/// `RedisStore.Configuration.onConnectionHealth` and `pingEveryConnection` on a real redis-server
/// stopped and restarted: every connection reports `ready`, then `down` once each (not once per
/// reconnect attempt), then `ready` again; `pingEveryConnection` succeeds only while all answer.
final class RedisConnectionHealthTests: XCTestCase {
    private final class Reports: Sendable {
        let items = Mutex<[(Int, RedisConnectionHealth)]>([])
        func latest(_ count: Int) -> [RedisConnectionHealth?] {
            items.withLock { items in (0..<count).map { i in items.last { $0.0 == i }?.1 } }
        }
        func count(_ health: RedisConnectionHealth, _ index: Int) -> Int {
            items.withLock { $0.filter { $0.0 == index && $0.1 == health }.count }
        }
    }

    private func pingEvery(_ store: RedisStore) -> Bool? {
        let box = CompletionBox<Bool>()
        store.pingEveryConnection { box.put((try? $0.get()) != nil) }
        return box.take(timeout: 10)
    }

    func testHealthFollowsTheServerAndPingEveryConnectionNeedsAll() throws {
        let server = try RedisServer()
        let reports = Reports()
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: server.url))
        configuration.connections = 3
        configuration.commandTimeout = 500
        configuration.connectTimeout = 500
        configuration.reconnectBaseDelay = 20
        configuration.reconnectMaximumDelay = 200
        configuration.onConnectionHealth = { index, health, _ in reports.items.withLock { $0.append((index, health)) } }
        let store = try RedisStore(configuration: configuration)
        defer { store.close() }
        XCTAssertEqual(store.connectionCount, 3)
        waitFor("every connection ready", timeout: 15) { reports.latest(3) == [.ready, .ready, .ready] }
        XCTAssertEqual(pingEvery(store), true)

        server.stop()
        waitFor("every connection sees the loss without traffic", timeout: 15) { reports.latest(3) == [.down, .down, .down] }
        XCTAssertEqual(pingEvery(store), false)
        // Several reconnect attempts (20 ms doubling to 200 ms) fail meanwhile: still one `down` each.
        let until = Date().addingTimeInterval(1)
        while Date() < until { _ = pingEvery(store) }
        for i in 0..<3 { XCTAssertEqual(reports.count(.down, i), 1, "connection \(i): \(reports.items.withLock { $0 })") }

        try server.start()
        waitFor("every connection back", timeout: 15) { reports.latest(3) == [.ready, .ready, .ready] }
        XCTAssertEqual(pingEvery(store), true)
        for i in 0..<3 { XCTAssertEqual(reports.count(.ready, i), 2) }
    }
}
