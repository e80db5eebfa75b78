import GatewayRules
import XCTest
@testable import GatewayConfig

/// `store:` with a Redis Cluster (`redis+cluster://` seeds, the one `RedisURL` grammar) and
/// `store.wait_replicas`.
final class ClusterStoreConfigTests: XCTestCase {
    private func yaml(_ store: String) -> String {
        ConfigTestHelpers.minimal().replacingOccurrences(of: "store: memory", with: store)
    }

    func testClusterURLAndWaitReplicas() throws {
        let loaded = try XCTUnwrap(loadOK(yaml("""
            store:
              url: redis+cluster://10.0.0.1:7000,10.0.0.2:7000
              password: pw
              wait_replicas: 1
            """)))
        let store = loaded.configuration.store
        XCTAssertEqual(store.waitReplicas, 1)
        guard case .redis(let url) = store.kind else { return XCTFail("not Redis: \(store)") }
        XCTAssertEqual(url.clusterSeeds, [.tcp(host: "10.0.0.1", port: 7000), .tcp(host: "10.0.0.2", port: 7000)])
        XCTAssertEqual(url.password, "pw")
        XCTAssertEqual(store.description, "redis+cluster://:***@10.0.0.1:7000,10.0.0.2:7000")
        // The short form, and the default of no WAIT.
        let short = try XCTUnwrap(loadOK(yaml("store: redis+cluster://cache:6379")))
        XCTAssertEqual(short.configuration.store.waitReplicas, 0)
        XCTAssertNotNil(short.configuration.store.kind)
        // wait_replicas with one Redis server (it may have replicas too).
        XCTAssertEqual(loadOK(yaml("store: {url: \"redis://127.0.0.1:6379/0\", wait_replicas: 2}"))?.configuration.store.waitReplicas, 2)
    }

    func testRefusals() {
        XCTAssertTrue(errorLines(yaml("store: {url: redis+cluster://h:1, wait_replicas: 17}")).contains { $0.contains("store.wait_replicas") })
        XCTAssertTrue(errorLines(yaml("store: {url: redis+cluster://h:1, wait_replicas: -1}")).contains { $0.contains("store.wait_replicas") })
        XCTAssertTrue(errorLines(yaml("store: {url: memory, wait_replicas: 1}")).contains { $0.contains("wait_replicas needs a Redis store") })
        XCTAssertTrue(errorLines(yaml("store: redis+cluster://h:1/2")).contains { $0.contains("Redis Cluster has only database 0") })
        XCTAssertTrue(errorLines(yaml("store: rediss+sentinel://h:26379/main")).contains { $0.contains("not supported yet") })
        XCTAssertTrue(errorLines(yaml("store: \"redis+cluster://:hunter2@h:1,\"")).allSatisfy { !$0.contains("hunter2") })
    }
}
