import Foundation
import GatewayTestSupport
import XCTest

/// `store.wait_replicas` checked at start-up: a primary with fewer connected replicas than asked makes
/// every write it takes answer 503, so the gateway says so (`store_warning`) - for one Redis server and
/// for each primary of a cluster.
final class WaitReplicasWarningTests: XCTestCase {
    private func warnings(store: String, waitReplicas: Int) throws -> [String] {
        let cas = try TestCAs.shared()
        let work = try E2EPaths.temporaryDirectory("wait-replicas")
        defer { try? FileManager.default.removeItem(at: work) }
        let dead = try ReservedPort()
        let upstream = try ReservedPort()
        let yaml = E2EEnvironment.yaml(store: "\(store)\n  wait_replicas: \(waitReplicas)", upstreamPort: upstream.port,
                                       deadPort: dead.port, roots: cas.trustedRoots)
        let gateway = try GatewayUnderTest(yaml: yaml, baseDirectory: work.path, clock: MovableClock().gatewayClock)
        defer { gateway.stop() }
        let box = CompletionBox<[String]>()
        gateway.runtime.storeWarnings { box.put($0) }
        return try XCTUnwrap(box.take(timeout: 30), "no store warnings answer")
    }

    func testOneRedisWithoutReplicaIsWarnedAbout() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let warned = try warnings(store: redis.url, waitReplicas: 1)
        XCTAssertEqual(warned, ["store: wait_replicas is 1 but the Redis primary 127.0.0.1:\(redis.port) has 0 connected replicas: "
                                + "the writes it takes answer 503 store_unavailable until enough replicas are connected"])
        // Failing variant: without wait_replicas, nothing to say.
        XCTAssertEqual(try warnings(store: redis.url, waitReplicas: 0), [])
    }

    func testClusterPrimariesWithTheirReplicasAreNot() throws {
        let cluster = try SharedRedisCluster.cluster()
        try cluster.waitUntilHealthy()
        XCTAssertEqual(try warnings(store: cluster.url, waitReplicas: 1), [])
        let two = try warnings(store: cluster.url, waitReplicas: 2)
        XCTAssertEqual(two.count, 3, "each of the three primaries has one replica: \(two)")
        XCTAssertTrue(two.allSatisfy { $0.contains("wait_replicas is 2") && $0.contains("has 1 connected replicas") }, "\(two)")
    }
}
