import Foundation
import GatewayTestSupport
import XCTest

/// A gateway in-process on the shared local Redis Cluster (`SharedRedisCluster`: three primaries,
/// three replicas) with the standard routes of `E2EEnvironment.yaml`, `store.wait_replicas` as
/// asked, the Python upstream and the test CAs; devices are software ones (`SimDevice`).
final class ClusterGatewayEnvironment: GatewayClient, @unchecked Sendable {  // immutable after init; parts lock themselves
    let cluster: RedisCluster
    let upstream: UpstreamProcess
    let cas: TestCAs
    let work: URL
    let clock = MovableClock()
    let gateway: GatewayUnderTest
    let dead: ReservedPort

    var port: UInt16 { gateway.port }
    var adminPort: UInt16 { gateway.adminPort }

    init(waitReplicas: Int) throws {
        cluster = try SharedRedisCluster.cluster()
        try cluster.waitUntilHealthy()
        cas = try TestCAs.shared()
        work = try E2EPaths.temporaryDirectory("cluster")
        upstream = try UpstreamProcess()
        dead = try ReservedPort()
        gateway = try GatewayUnderTest(yaml: ClusterGatewayEnvironment.yaml(cluster: cluster, waitReplicas: waitReplicas,
                                                                              upstreamPort: upstream.port, deadPort: dead.port,
                                                                              roots: cas.trustedRoots),
                                       baseDirectory: work.path, clock: clock.gatewayClock)
    }

    /// The standard configuration with the cluster as the store.
    static func yaml(cluster: RedisCluster, waitReplicas: Int, upstreamPort: UInt16, deadPort: UInt16, roots: [String],
                     admin: String = "127.0.0.1:0") -> String {
        E2EEnvironment.yaml(store: "\(cluster.url)\n  wait_replicas: \(waitReplicas)", upstreamPort: upstreamPort,
                            deadPort: deadPort, roots: roots, admin: admin)
    }

    func stop() {
        gateway.stop()
        upstream.stop()
        try? FileManager.default.removeItem(at: work)
    }

    /// `aa:{<keyId b64url>}:key`.
    func keyName(_ device: ClientDevice) -> String { "aa:{\(base64URL(device.keyId))}:key" }

    /// The slot of the device's records (Redis' `CLUSTER KEYSLOT`).
    func slot(_ device: ClientDevice) throws -> Int { try cluster.keySlot(keyName(device)) }
}
