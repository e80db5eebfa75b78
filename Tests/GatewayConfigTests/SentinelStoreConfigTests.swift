import GatewayRules
import XCTest
@testable import GatewayConfig

/// `store: redis+sentinel://...`: the one URL grammar in the configuration, with its refusals.
final class SentinelStoreConfigTests: XCTestCase {
    private func config(_ store: String) -> String {
        ConfigTestHelpers.minimal().replacingOccurrences(of: "store: memory", with: store)
    }

    func testSentinelURLLoads() throws {
        let store = try XCTUnwrap(loadOK(config("""
        store:
          url: redis+sentinel://10.0.0.1:26379,10.0.0.2/main/2
          password: pw
          wait_replicas: 1
        """))?.configuration.store)
        guard case .redis(let url) = store.kind else { return XCTFail("\(store)") }
        XCTAssertEqual(url.sentinel?.master, "main")
        XCTAssertEqual(url.sentinel?.sentinels, [.tcp(host: "10.0.0.1", port: 26379), .tcp(host: "10.0.0.2", port: 26379)])
        XCTAssertEqual(url.database, 2)
        XCTAssertEqual(url.password, "pw")
        XCTAssertEqual(store.waitReplicas, 1)
        XCTAssertEqual(store.description, "redis+sentinel://:***@10.0.0.1:26379,10.0.0.2:26379/main/2")
    }

    func testSentinelRefusals() {
        XCTAssertEqual(errorLines(config("store: redis+sentinel://10.0.0.1:26379")),
                       ["store: a redis+sentinel:// URL names the master after the Sentinels: redis+sentinel://host:26379[,host:26379...]/master-name (line 2, column 8)"])
        XCTAssertEqual(errorLines(config("store: rediss+sentinel://10.0.0.1/main")),
                       ["store: rediss+sentinel:// (Redis Sentinel over TLS) is not supported yet: use redis+sentinel:// on a trusted network, or rediss:// to the primary (line 2, column 8)"])
        XCTAssertTrue(errorLines(config("store: {url: 'redis+sentinel://10.0.0.1/main', tls: {ca: ca.pem}}")).first?
            .hasPrefix("store.tls: tls applies to rediss://") == true)
    }
}
