import GatewayConfig
import GatewayStore
import GatewayTestSupport
import XCTest
@testable import Gateway

/// check-config on `store.tls` files (`TLSFileChecker`): a client certificate and its key load and
/// match, or are reported at `store.tls.certificate`; a CA bundle loads or is reported.
final class StoreTLSFileCheckTests: XCTestCase {
    func testClientCertificateChecked() throws {
        let pki = TestPKI.shared
        let one = try pki.client("store-check-one", subject: "one")
        let two = try pki.client("store-check-two", subject: "two")
        func issues(_ chain: String, _ key: String) -> [ConfigIssue] {
            TLSFileChecker.check(TLSFileReference(path: "store.tls.certificate", mark: nil,
                                                  files: .clientCertificate(TLSCertificatePair(chain: chain, key: key))))
        }
        XCTAssertEqual(issues(one.chainPath, one.keyPath), [])
        let mismatch = issues(one.chainPath, two.keyPath)
        XCTAssertEqual(mismatch.count, 1)
        XCTAssertEqual(mismatch.first?.path, "store.tls.certificate")
        XCTAssertTrue(mismatch.first?.message.contains("does not match") == true, "\(mismatch)")
        XCTAssertEqual(issues(one.chainPath, "/nonexistent/key.pem").count, 1)
        let ca = TLSFileChecker.check(TLSFileReference(path: "store.tls.ca", mark: nil, files: .certificateAuthorities(one.keyPath)))
        XCTAssertEqual(ca.count, 1, "a key file is not a CA bundle: \(ca)")
        let missing = TLSFileChecker.check(TLSFileReference(path: "upstreams.api.tls.ca", mark: nil,
                                                            files: .certificateAuthorities("/nonexistent/ca.pem")))
        XCTAssertEqual(missing.map(\.message), ["/nonexistent/ca.pem: cannot read: No such file or directory"],
                       "the file named once, then the reason")
        XCTAssertEqual(TLSFileChecker.check(TLSFileReference(path: "store.tls.ca", mark: nil, files: .certificateAuthorities(pki.root.certificate))), [])
    }
}

/// The configuration's `store.tls` reaches the running store (`GatewayRuntime.makeStore`): a
/// mutual-TLS redis-server accepts the gateway with `ca`, `certificate` and `key`, and refuses it
/// without the client certificate or with another CA (the store stays unavailable).
final class StoreTLSRuntimeTests: XCTestCase {
    private func store(_ tls: String, server: RedisTLSServer) throws -> any AttestStore {
        let yaml = """
            listen: 127.0.0.1:8080
            store:
              url: rediss://127.0.0.1:\(server.port)/0
              tls: \(tls)
            apps:
              - app_id: ABCDE12345.com.example.app
            upstreams:
              app: http://127.0.0.1:8081
            routes:
              - path_prefix: /
                upstream: app
            """
        let configuration = try GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp")
        return try GatewayRuntime.makeStore(configuration.configuration.store)
    }

    private func unavailable(_ store: any AttestStore) -> Bool {
        let box = CompletionBox<Bool>()
        store.ping { box.put((try? $0.get()) == nil) }
        return box.take(timeout: 10) ?? false
    }

    func testStoreTLSSettingsReachTheConnection() throws {
        let server = try RedisTLSServer(requireClientCertificate: true)
        let pki = server.pki
        let mutual = try store("{ca: \(pki.root.certificate), certificate: \(server.clientCertificate.chainPath), key: \(server.clientCertificate.keyPath)}", server: server)
        defer { mutual.close() }
        try StoreReadiness.waitUntilReady(mutual)

        let noCertificate = try store("{ca: \(pki.root.certificate)}", server: server)
        defer { noCertificate.close() }
        let wrongCA = try store("{ca: \(pki.wrongRoot.certificate), certificate: \(server.clientCertificate.chainPath), key: \(server.clientCertificate.keyPath)}", server: server)
        defer { wrongCA.close() }
        for _ in 0..<3 {
            XCTAssertTrue(unavailable(noCertificate), "answered without a client certificate")
            XCTAssertTrue(unavailable(wrongCA), "answered with an untrusted server certificate")
            usleep(100_000)
        }
    }
}
