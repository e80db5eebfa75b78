import Foundation
import GatewayIO
import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// `rediss+cluster://` against a real three-primary Redis Cluster speaking only TLS (`--port 0
/// --tls-port P --tls-cluster yes`): the slot map read over TLS, every node reached over TLS with its
/// certificate verified (the nodes announce 127.0.0.1; their certificate has that IP SAN), the
/// conformance suite passing; a wrong CA leaves the store unavailable.
final class RedisTLSClusterTests: XCTestCase {
    /// A TLS-only cluster of three primaries (no replicas), shared by the class.
    final class TLSCluster: @unchecked Sendable {  // immutable after init
        let ports: [UInt16]
        private let children: [ChildProcess]
        private let root: URL
        let pki = TestPKI.shared

        init() throws {
            root = URL(fileURLWithPath: "/tmp").appendingPathComponent("attest-tls-cluster-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
            let ca = pki.root.certificate
            // The cluster bus authenticates both ends: the node certificate is also a client one.
            let certificate = try pki.node("redis-cluster-node-\(UUID().uuidString.prefix(8))", names: ["127.0.0.1"])
            var ports: [UInt16] = []
            var children: [ChildProcess] = []
            do {
                for index in 0..<3 {
                    let directory = root.appendingPathComponent("node\(index)")
                    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                    let bus = FreePort.allocate()
                    let (port, child) = try FreePortServer.start({ port in
                        try ChildProcess("redis-server", [
                            "--port", "0", "--tls-port", String(port), "--cluster-port", String(bus), "--bind", "127.0.0.1",
                            "--tls-cert-file", certificate.chainPath, "--tls-key-file", certificate.keyPath,
                            "--tls-ca-cert-file", ca, "--tls-auth-clients", "no", "--tls-cluster", "yes", "--tls-replication", "yes",
                            "--cluster-enabled", "yes", "--cluster-config-file", directory.appendingPathComponent("nodes.conf").path,
                            "--cluster-node-timeout", "1000", "--dir", directory.path, "--save", "", "--appendonly", "no",
                            "--maxmemory-policy", "noeviction", "--daemonize", "no",
                        ])
                    }, owns: { port, child in
                        let info = try? ChildProcess.run("redis-cli", TLSCluster.cli(port, ca: ca) + ["INFO", "server"])
                        return info?.output.contains("process_id:\(child.pid)") == true
                    })
                    ports.append(port)
                    children.append(child)
                }
                let created = try ChildProcess.run("timeout", ["60", "redis-cli", "--tls", "--cacert", ca, "--cluster", "create"]
                                                   + ports.map { "127.0.0.1:\($0)" } + ["--cluster-replicas", "0", "--cluster-yes"])
                guard created.status == 0 else { throw SetupFailure("redis-cli --cluster create over TLS failed: \(created.output)") }
                let deadline = Date().addingTimeInterval(60)
                while !ports.allSatisfy({ port in
                    ((try? ChildProcess.run("redis-cli", TLSCluster.cli(port, ca: ca) + ["CLUSTER", "INFO"]))?.output ?? "").contains("cluster_state:ok")
                }) {
                    guard Date() < deadline else { throw SetupFailure("the TLS cluster is not ok after 60 s") }
                    usleep(100_000)
                }
            } catch {
                for child in children { child.stop(signal: SIGKILL, grace: 1) }
                throw error
            }
            self.ports = ports
            self.children = children
        }

        static func cli(_ port: UInt16, ca: String) -> [String] { ["--tls", "--cacert", ca, "-h", "127.0.0.1", "-p", String(port)] }

        /// `DBSIZE` of each node over TLS.
        func keyCounts() throws -> [Int] {
            try ports.map { port in
                Int(try ChildProcess.run("redis-cli", TLSCluster.cli(port, ca: pki.root.certificate) + ["DBSIZE"]).output
                    .trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            }
        }

        deinit {
            for child in children { child.stop(signal: SIGKILL, grace: 1) }
            try? FileManager.default.removeItem(at: root)
        }
    }

    private static let cluster = Result { try TLSCluster() }
    private var stores: [RedisStore] = []

    override func tearDown() {
        for store in stores { store.close() }
        stores = []
        super.tearDown()
    }

    private func makeStore(ca: String, connections: Int = 2) throws -> RedisStore {
        let cluster = try Self.cluster.get()
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: "rediss+cluster://127.0.0.1:\(cluster.ports[0])"))
        configuration.connections = connections
        configuration.tlsContext = try TLSClientContext(settings: RedisStore.tlsSettings(caPath: ca))
        let store = try RedisStore(configuration: configuration)
        stores.append(store)
        return store
    }

    /// Every conformance check through the TLS cluster; the records spread over the three primaries.
    func testConformanceSuiteOverTLSCluster() throws {
        let cluster = try Self.cluster.get()
        for check in StoreConformance.checks {
            let store = try makeStore(ca: cluster.pki.root.certificate)
            try StoreReadiness.waitUntilReady(store)
            XCTAssertNoThrow(try check.run(StoreConformance(store: store)), check.name)
            store.close()
        }
        let counts = try cluster.keyCounts()
        XCTAssertTrue(counts.allSatisfy { $0 > 0 }, "every primary holds records: \(counts)")
    }

    /// A CA that did not sign the node certificates: the slot map cannot even be read; unavailable.
    func testWrongCAIsRefused() throws {
        let store = try makeStore(ca: TestPKI.shared.wrongRoot.certificate, connections: 1)
        let suite = StoreConformance(store: store)
        for _ in 0..<3 {
            let pinged = try suite.wait("ping") { store.ping(completion: $0) }
            guard case .failure = pinged else { return XCTFail("a cluster with an untrusted certificate answered") }
        }
        let record = try suite.makeRecord()
        let fetched = try suite.wait("fetch") { store.fetchKey(record.keyId, completion: $0) }
        guard case .failure = fetched else { return XCTFail("fetch answered: \(fetched)") }
    }
}
