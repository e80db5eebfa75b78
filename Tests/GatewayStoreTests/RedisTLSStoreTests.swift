import Foundation
import GatewayIO
import GatewayRedis
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// `rediss://` against a real redis-server speaking only TLS (`RedisTLSServer`): the certificate is
/// verified (CA, host name), a refused certificate leaves the store unavailable (never a plain or
/// unverified fallback), and mutual TLS sends the client certificate.
final class RedisTLSStoreTests: XCTestCase {
    /// One TLS server per class with a certificate for the address 127.0.0.1 (IP SAN).
    private static let server = Result { try RedisTLSServer() }
    /// One TLS server per class with a certificate for the DNS name `localhost` only.
    private static let namedServer = Result { () throws -> RedisTLSServer in
        let pki = TestPKI.shared
        let leaf = try pki.leaf("redis-localhost", names: ["localhost"])
        return try RedisTLSServer(pki: pki, certificate: try pki.certificate(leaf))
    }
    /// One TLS server per class that requires a client certificate (`tls-auth-clients yes`).
    private static let mutualServer = Result { try RedisTLSServer(requireClientCertificate: true) }

    private var stores: [RedisStore] = []
    /// Failure details the stores made since the last reset report (each store keeps the instance
    /// current when it was made).
    private var details = Details()

    /// Health details reported by the stores (the last failure's text).
    final class Details: @unchecked Sendable {  // `items` guarded by `lock`
        private let lock = NSLock()
        private var items: [String] = []
        func add(_ detail: String) { lock.lock(); items.append(detail); lock.unlock() }
        var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
    }

    override func tearDown() {
        for store in stores { store.close() }
        stores = []
        super.tearDown()
    }

    private func makeStore(_ url: String, verify: Bool = true, ca: String? = TestPKI.shared.root.certificate,
                           client: (chainPath: String, keyPath: String)? = nil, connections: Int = 1) throws -> RedisStore {
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: url))
        configuration.connections = connections
        configuration.connectTimeout = 1_000
        configuration.commandTimeout = 1_000
        configuration.tlsContext = try TLSClientContext(settings: RedisStore.tlsSettings(verify: verify, caPath: ca, clientCertificate: client))
        let details = self.details
        configuration.onConnectionHealth = { _, health, detail in if health == .down { details.add(detail) } }
        let store = try RedisStore(configuration: configuration)
        stores.append(store)
        return store
    }

    /// Pings once: nil when it answered, else the failure.
    private func ping(_ store: RedisStore) -> StoreUnavailable? {
        let box = CompletionBox<Result<Void, StoreUnavailable>>()
        store.ping { box.put($0) }
        guard let result = box.take(timeout: 10) else {
            XCTFail("ping did not complete")
            return StoreUnavailable(.timeout)
        }
        if case .failure(let error) = result { return error }
        return nil
    }

    /// The store never becomes ready and its connection reports `detail` (polled; fails otherwise).
    private func expectRefused(_ store: RedisStore, detailContaining needle: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        waitFor("a connection failure naming \(needle)", timeout: 10, file: file, line: line) {
            self.details.all.contains { $0.contains(needle) }
        }
        for _ in 0..<3 {
            XCTAssertNotNil(ping(store), "a refused TLS peer answered a command", file: file, line: line)
        }
    }

    // MARK: Conformance over TLS

    private func suite() throws -> StoreConformance {
        let server = try Self.server.get()
        let store = try makeStore("rediss://127.0.0.1:\(server.port)/0", connections: 2)
        try StoreReadiness.waitUntilReady(store)
        return StoreConformance(store: store)
    }

    /// Every check of the shared conformance suite, through TLS.
    func testConformanceSuiteOverTLS() throws {
        for check in StoreConformance.checks {
            let suite = try suite()
            XCTAssertNoThrow(try check.run(suite), check.name)
            stores.forEach { $0.close() }
            stores = []
        }
    }

    /// The system CA store (no `ca`) does not know the test root: refused.
    func testUnknownCAIsRefused() throws {
        let server = try Self.server.get()
        let trusted = try makeStore("rediss://127.0.0.1:\(server.port)")
        try StoreReadiness.waitUntilReady(trusted)
        let untrusted = try makeStore("rediss://127.0.0.1:\(server.port)", ca: nil)
        expectRefused(untrusted, detailContaining: "certificate verify failed")
    }

    /// A CA file with another root: refused; with `verify: false` the same server is accepted.
    func testWrongCAIsRefusedUnlessVerificationIsOff() throws {
        let server = try Self.server.get()
        let wrong = try makeStore("rediss://127.0.0.1:\(server.port)", ca: TestPKI.shared.wrongRoot.certificate)
        expectRefused(wrong, detailContaining: "certificate verify failed")
        let unverified = try makeStore("rediss://127.0.0.1:\(server.port)", verify: false, ca: nil)
        try StoreReadiness.waitUntilReady(unverified)
    }

    /// A certificate for `localhost` only: `rediss://localhost` passes (DNS name, SNI), the address
    /// 127.0.0.1 is refused (not in the certificate); the `127.0.0.1` certificate refuses `localhost`.
    func testHostNameMismatchIsRefused() throws {
        let named = try Self.namedServer.get()
        let byName = try makeStore("rediss://localhost:\(named.port)")
        try StoreReadiness.waitUntilReady(byName)
        let byAddress = try makeStore("rediss://127.0.0.1:\(named.port)")
        expectRefused(byAddress, detailContaining: "IP address mismatch")

        let address = try Self.server.get()
        details = Details()
        let wrongName = try makeStore("rediss://localhost:\(address.port)")
        expectRefused(wrongName, detailContaining: "hostname mismatch")
    }

    /// A plain `redis://` client to the TLS port gets no answer it can use: unavailable, not accepted.
    func testPlainClientToTLSPortIsUnavailable() throws {
        let server = try Self.server.get()
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: "redis://127.0.0.1:\(server.port)"))
        configuration.connectTimeout = 500
        configuration.commandTimeout = 500
        let plain = try RedisStore(configuration: configuration)
        stores.append(plain)
        for _ in 0..<3 { XCTAssertNotNil(ping(plain)) }
    }

    /// `tls-auth-clients yes`: with the client certificate the store works; without one the server
    /// drops the connection (unavailable); a certificate from another root is refused too.
    func testMutualTLS() throws {
        let server = try Self.mutualServer.get()
        let url = "rediss://127.0.0.1:\(server.port)"
        let withCertificate = try makeStore(url, client: server.clientCertificate)
        try StoreReadiness.waitUntilReady(withCertificate)
        let suite = StoreConformance(store: withCertificate)
        try suite.registerAndFetchRoundTrip()

        details = Details()
        let without = try makeStore(url)
        waitFor("the server to refuse a client without a certificate", timeout: 10) { !self.details.all.isEmpty }
        for _ in 0..<3 { XCTAssertNotNil(ping(without)) }

        let foreign = try TestPKI.shared.client("redis-foreign-client", subject: "intruder", by: TestPKI.shared.wrongRoot)
        let wrongClient = try makeStore(url, client: foreign)
        for _ in 0..<3 { XCTAssertNotNil(ping(wrongClient)) }
    }

    /// The client certificate must match its key: the context refuses to build.
    func testClientCertificateKeyMismatchIsAConfigurationError() throws {
        let pki = TestPKI.shared
        let one = try pki.client("redis-client-one", subject: "one")
        let two = try pki.client("redis-client-two", subject: "two")
        XCTAssertThrowsError(try TLSClientContext(settings: RedisStore.tlsSettings(caPath: pki.root.certificate,
                                                                                  clientCertificate: (one.chainPath, two.keyPath)))) { error in
            guard case TLSContextError.keyMismatch = error else { return XCTFail("\(error)") }
        }
        XCTAssertNoThrow(try TLSClientContext(settings: RedisStore.tlsSettings(caPath: pki.root.certificate, clientCertificate: one)))
    }
}
