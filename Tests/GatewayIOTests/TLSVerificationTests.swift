import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest

/// The client side's peer verification (RFC 5280 path validation, RFC 6125 name check) and its
/// `verify: false` escape hatch.
final class TLSVerificationTests: XCTestCase {
    let pki = TestPKI.shared

    func server(_ certificate: (chainPath: String, keyPath: String)) throws -> TLSServerContext {
        try TLSServerContext(settings: TLSServerSettings(certificates: [.init(chainPath: certificate.chainPath, keyPath: certificate.keyPath)]))
    }

    func client(ca: String?, verify: Bool = true) throws -> TLSClientContext {
        try TLSClientContext(settings: TLSClientSettings(verify: verify, caPath: ca))
    }

    func testTheRightCAAndNameVerify() throws {
        let pair = try TLSPair(server: try server(pki.a), client: try client(ca: pki.root.certificate), serverName: "a.test")
        pair.handshakeSucceeds()
        XCTAssertEqual(pair.client.peerCertificateSubject, "CN=a.test")
        pair.ping()
    }

    func testTheClientOffersHTTP11() throws {
        let context = try TLSServerContext(settings: TLSServerSettings(certificates: [.init(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath)]))
        let pair = try TLSPair(server: context, client: try client(ca: pki.root.certificate), serverName: "a.test")
        pair.handshakeSucceeds()
        XCTAssertEqual(pair.server.negotiatedProtocol, "http/1.1")
        XCTAssertEqual(pair.client.negotiatedProtocol, "http/1.1")
    }

    func testAWrongCAFails() throws {
        let pair = try TLSPair(server: try server(pki.a), client: try client(ca: pki.wrongRoot.certificate), serverName: "a.test")
        let (s, c) = pair.handshake()
        XCTAssertTrue(c.failed(containing: "certificate verify failed"), "\(c)")
        XCTAssertTrue(c.failed(containing: "unable to get local issuer certificate"), "\(c)")
        XCTAssertTrue(s.failed(containing: "alert unknown ca"), "the client told the server: \(s)")
    }

    func testTheSystemStoreDoesNotTrustTheTestRoot() throws {
        let context = try client(ca: nil)
        XCTAssertTrue(context.isVerifying)
        let pair = try TLSPair(server: try server(pki.a), client: context, serverName: "a.test")
        XCTAssertTrue(pair.handshake().client.failed(containing: "certificate verify failed"))
    }

    func testAWrongHostNameFails() throws {
        let context = try client(ca: pki.root.certificate)
        let wrong = try TLSPair(server: try server(pki.a), client: context, serverName: "b.test")
        let (_, c) = wrong.handshake()
        XCTAssertTrue(c.failed(containing: "hostname mismatch"), "\(c)")

        // A wildcard covers one label, never a partial one or the bare domain.
        let bare = try TLSPair(server: try server(pki.wildcard), client: context, serverName: "w.test")
        XCTAssertTrue(bare.handshake().client.failed(containing: "hostname mismatch"))
        let covered = try TLSPair(server: try server(pki.wildcard), client: context, serverName: "api.w.test")
        covered.handshakeSucceeds()
    }

    func testAnIPAddressIsCheckedAgainstIPNames() throws {
        let context = try client(ca: pki.root.certificate)
        let right = try TLSPair(server: try server(pki.address), client: context, serverName: "127.0.0.1")
        right.handshakeSucceeds()
        let wrong = try TLSPair(server: try server(pki.address), client: context, serverName: "127.0.0.2")
        XCTAssertTrue(wrong.handshake().client.failed(containing: "IP address mismatch"))
        let dnsCertificate = try TLSPair(server: try server(pki.a), client: context, serverName: "127.0.0.1")
        XCTAssertTrue(dnsCertificate.handshake().client.failed(containing: "IP address mismatch"))
    }

    func testAnExpiredCertificateFailsVerification() throws {
        let expired = try pki.leaf("expired-verify", names: ["old.test"], start: "20200101000000Z", end: "20210101000000Z")
        let pair = try TLSPair(server: try server(try pki.certificate(expired)), client: try client(ca: pki.root.certificate),
                               serverName: "old.test")
        XCTAssertTrue(pair.handshake().client.failed(containing: "certificate has expired"))
    }

    func testVerifyOffAcceptsAnyCertificateAndName() throws {
        let context = try client(ca: pki.wrongRoot.certificate, verify: false)
        XCTAssertFalse(context.isVerifying)
        let pair = try TLSPair(server: try server(pki.a), client: context, serverName: "not-the-name.test")
        pair.handshakeSucceeds()
        pair.ping()
        let noCA = try TLSPair(server: try server(pki.a), client: try client(ca: nil, verify: false), serverName: "a.test")
        noCA.handshakeSucceeds()
    }

    func testClientContextErrors() throws {
        XCTAssertThrowsError(try client(ca: pki.directory + "/missing.pem")) { error in
            guard case TLSContextError.unreadableFile(let path, let reason) = error else { return XCTFail("\(error)") }
            XCTAssertTrue(path.hasSuffix("missing.pem"))
            XCTAssertEqual(reason, "No such file or directory")
        }
        XCTAssertThrowsError(try client(ca: try pki.file("ca-garbage.pem", "hello\n"))) { error in
            guard case TLSContextError.notPEM = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try client(ca: pki.a.keyPath)) { error in
            guard case TLSContextError.noCertificate = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try TLSClientContext(settings: TLSClientSettings(alpn: [""]))) { error in
            guard case TLSContextError.invalidSettings = error else { return XCTFail("\(error)") }
        }
        XCTAssertThrowsError(try TLSClientContext(settings: TLSClientSettings(minVersion: .tls13, maxVersion: .tls12)))
        XCTAssertThrowsError(try TLSConnection(client: try client(ca: nil), fd: -1, serverName: ""))
    }
}
