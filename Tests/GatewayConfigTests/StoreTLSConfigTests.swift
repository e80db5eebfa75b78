import GatewayRules
import XCTest
@testable import GatewayConfig

/// `store: rediss://...` and `store.tls`: defaults, ca / certificate / key / verify, the verify:
/// false warning, and tls where it does not apply.
final class StoreTLSConfigTests: XCTestCase {
    private func config(_ store: String) -> String {
        ConfigTestHelpers.minimal().replacingOccurrences(of: "store: memory", with: store)
    }

    // MARK: passing cases

    func testStringFormUsesTheSystemStore() throws {
        let store = try XCTUnwrap(loadOK(config("store: rediss://Cache.Internal:6380/2"))?.configuration.store)
        guard case .redis(let url) = store.kind else { return XCTFail("\(store)") }
        XCTAssertTrue(url.tls)
        XCTAssertEqual(url.endpoint, .tcp(host: "cache.internal", port: 6380))
        XCTAssertEqual(url.database, 2)
        XCTAssertNil(store.tls)
        XCTAssertEqual(store.description, "rediss://cache.internal:6380/2")
        // A plain URL stays plain.
        let plain = try XCTUnwrap(loadOK(config("store: redis://cache:6379"))?.configuration.store)
        guard case .redis(let plainURL) = plain.kind else { return XCTFail("\(plain)") }
        XCTAssertFalse(plainURL.tls)
    }

    func testCAClientCertificateAndFiles() throws {
        let loaded = try XCTUnwrap(loadOK(config("""
        store:
          url: rediss+cluster://10.0.0.1:7000,10.0.0.2:7000
          tls:
            ca: tls/redis-ca.pem
            certificate: tls/client.pem
            key: /etc/gw/client.key
        """), base: "/srv/gw"))
        let store = loaded.configuration.store
        guard case .redis(let url) = store.kind else { return XCTFail("\(store)") }
        XCTAssertTrue(url.tls)
        XCTAssertEqual(url.clusterSeeds?.count, 2)
        XCTAssertEqual(store.tls, StoreTLSConfiguration(ca: "/srv/gw/tls/redis-ca.pem",
                                                        certificate: TLSCertificatePair(chain: "/srv/gw/tls/client.pem", key: "/etc/gw/client.key"),
                                                        verify: true))
        XCTAssertEqual(loaded.tlsFiles.map(\.path), ["store.tls.ca", "store.tls.certificate"])
        XCTAssertEqual(loaded.tlsFiles.map(\.files), [.certificateAuthorities("/srv/gw/tls/redis-ca.pem"),
                                                      .clientCertificate(TLSCertificatePair(chain: "/srv/gw/tls/client.pem", key: "/etc/gw/client.key"))])
        XCTAssertEqual(loaded.warnings.filter { $0.path.hasPrefix("store") }, [])
    }

    func testVerifyFalseLoadsWithALoudWarning() throws {
        let loaded = try XCTUnwrap(loadOK(config("store: {url: 'rediss://cache:6380', tls: {verify: false}}")))
        XCTAssertEqual(loaded.configuration.store.tls?.verify, false)
        let warnings = loaded.warnings.filter { $0.path.hasPrefix("store") }.map(\.description)
        XCTAssertEqual(warnings.count, 1, "\(warnings)")
        XCTAssertTrue(warnings.first?.hasPrefix("store.tls.verify: TLS VERIFICATION OFF") == true, "\(warnings)")
    }

    // MARK: failing cases

    func testTLSOnAPlainStoreIsRefused() {
        XCTAssertEqual(errorLines(config("store: {url: 'redis://cache:6379', tls: {ca: ca.pem}}")),
                       ["store.tls: tls applies to rediss:// and rediss+cluster:// stores only (write rediss:// to connect to Redis with TLS) (line 2, column 41)"])
        XCTAssertEqual(errorLines(config("store: {url: memory, tls: {verify: true}}")).count, 1)
    }

    func testHalfAClientCertificateAndBadValuesAreRefused() {
        XCTAssertEqual(errorLines(config("store: {url: 'rediss://cache', tls: {certificate: c.pem}}")).count, 1)
        XCTAssertTrue(errorLines(config("store: {url: 'rediss://cache', tls: {key: c.key}}")).first?.contains("needs both certificate and key") == true)
        XCTAssertTrue(errorLines(config("store: {url: 'rediss://cache', tls: {verify: maybe}}")).first?.hasPrefix("store.tls.verify:") == true)
        XCTAssertTrue(errorLines(config("store: {url: 'rediss://cache', tls: {cafile: x}}")).first?.hasPrefix("store.tls.cafile:") == true)
        XCTAssertTrue(errorLines(config("store: {url: 'rediss://cache', tls: yes}")).first?.hasPrefix("store.tls:") == true)
        XCTAssertTrue(errorLines(config("store: {url: 'rediss://cache', tls: {ca: 'dir/'}}")).first?.hasPrefix("store.tls.ca:") == true)
    }
}
