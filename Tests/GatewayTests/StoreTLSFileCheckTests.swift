import GatewayConfig
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
        XCTAssertEqual(TLSFileChecker.check(TLSFileReference(path: "store.tls.ca", mark: nil, files: .certificateAuthorities(pki.root.certificate))), [])
    }
}
