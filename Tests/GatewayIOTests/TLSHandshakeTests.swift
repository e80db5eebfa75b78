import GatewayRules
import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest

/// Handshakes between a `TLSServerContext` and a `TLSClientContext` over a socketpair: versions,
/// ALPN (RFC 7301), SNI (RFC 6066) certificate selection.
final class TLSHandshakeTests: XCTestCase {
    let pki = TestPKI.shared

    func server(_ certificates: [(chainPath: String, keyPath: String)]? = nil, minVersion: TLSVersion = .tls12,
                alpn: [String] = ["h2", "http/1.1"]) throws -> TLSServerContext {
        let list = (certificates ?? [pki.a]).map { TLSServerSettings.Certificate(chainPath: $0.chainPath, keyPath: $0.keyPath) }
        return try TLSServerContext(settings: TLSServerSettings(certificates: list, minVersion: minVersion, alpn: alpn))
    }

    func client(alpn: [String] = ["http/1.1"], minVersion: TLSVersion = .tls12, maxVersion: TLSVersion = .tls13,
                verify: Bool = true) throws -> TLSClientContext {
        try TLSClientContext(settings: TLSClientSettings(verify: verify, caPath: pki.root.certificate, alpn: alpn,
                                                         minVersion: minVersion, maxVersion: maxVersion))
    }

    func testHandshakeDefaultsToTLS13AndReportsTheConnection() throws {
        let pair = try TLSPair(server: try server(), client: try client(), serverName: "a.test")
        XCTAssertFalse(pair.server.isHandshakeComplete)
        XCTAssertNil(pair.server.protocolVersion)
        pair.handshakeSucceeds()
        XCTAssertTrue(pair.server.isHandshakeComplete)
        XCTAssertEqual(pair.server.protocolVersion, "TLSv1.3")
        XCTAssertEqual(pair.client.protocolVersion, "TLSv1.3")
        XCTAssertEqual(pair.server.serverName, "a.test")
        XCTAssertEqual(pair.client.peerCertificateSubject, "CN=a.test")
        XCTAssertNil(pair.server.peerCertificateSubject, "no client certificate")
        XCTAssertFalse(pair.server.sessionReused)
        XCTAssertTrue(["TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_GCM_SHA256"].contains(pair.server.cipher ?? ""),
                      pair.server.cipher ?? "nil")
        XCTAssertEqual(pair.server.handshake(), .done, "done stays done")
        pair.ping()
    }

    func testTLS12NegotiatesAnIntermediateECDHECipher() throws {
        let pair = try TLSPair(server: try server(), client: try client(maxVersion: .tls12), serverName: "a.test")
        pair.handshakeSucceeds()
        XCTAssertEqual(pair.server.protocolVersion, "TLSv1.2")
        let cipher = pair.server.cipher ?? ""
        XCTAssertTrue(TLSServerContext.tls12CipherList.split(separator: ":").contains(Substring(cipher)), cipher)
        XCTAssertTrue(cipher.hasPrefix("ECDHE-ECDSA-"), "P-256 certificate: \(cipher)")
        pair.ping()
    }

    func testTLS12WithAnRSACertificateUsesECDHERSA() throws {
        let pair = try TLSPair(server: try server([pki.b]), client: try client(maxVersion: .tls12), serverName: "b.test")
        pair.handshakeSucceeds()
        XCTAssertTrue((pair.server.cipher ?? "").hasPrefix("ECDHE-RSA-"), pair.server.cipher ?? "nil")
    }

    func testMinVersion13RefusesATLS12OnlyClientAndAcceptsTLS13() throws {
        let context = try server(minVersion: .tls13)
        let refused = try TLSPair(server: context, client: try client(maxVersion: .tls12), serverName: "a.test")
        let (s, c) = refused.handshake()
        XCTAssertTrue(s.failed(containing: "unsupported protocol"), "\(s)")
        XCTAssertTrue(c.failed(containing: "protocol version"), "\(c)")
        XCTAssertEqual(refused.server.read(into: UnsafeMutableRawBufferPointer.allocate(byteCount: 16, alignment: 1)),
                       .failed("connection failed earlier"))

        let accepted = try TLSPair(server: context, client: try client(), serverName: "a.test")
        accepted.handshakeSucceeds()
        XCTAssertEqual(accepted.server.protocolVersion, "TLSv1.3")
    }

    func testALPNPrefersH2ThenHTTP11() throws {
        let context = try server()
        let both = try TLSPair(server: context, client: try client(alpn: ["http/1.1", "h2"]), serverName: "a.test")
        both.handshakeSucceeds()
        XCTAssertEqual(both.server.negotiatedProtocol, "h2", "the server's preference wins")
        XCTAssertEqual(both.client.negotiatedProtocol, "h2")

        let http11 = try TLSPair(server: context, client: try client(alpn: ["http/1.1"]), serverName: "a.test")
        http11.handshakeSucceeds()
        XCTAssertEqual(http11.server.negotiatedProtocol, "http/1.1")
    }

    func testALPNWithoutACommonProtocolContinuesWithoutALPN() throws {
        let context = try server()
        let other = try TLSPair(server: context, client: try client(alpn: ["spdy/3", "h3"]), serverName: "a.test")
        other.handshakeSucceeds()
        XCTAssertNil(other.server.negotiatedProtocol)
        XCTAssertNil(other.client.negotiatedProtocol)

        let none = try TLSPair(server: context, client: try client(alpn: []), serverName: "a.test")
        none.handshakeSucceeds()
        XCTAssertNil(none.server.negotiatedProtocol)
    }

    func testALPNListIsConfigurable() throws {
        let pair = try TLSPair(server: try server(alpn: ["http/1.1"]), client: try client(alpn: ["h2", "http/1.1"]), serverName: "a.test")
        pair.handshakeSucceeds()
        XCTAssertEqual(pair.server.negotiatedProtocol, "http/1.1")
        let off = try TLSPair(server: try server(alpn: []), client: try client(alpn: ["h2"]), serverName: "a.test")
        off.handshakeSucceeds()
        XCTAssertNil(off.server.negotiatedProtocol)
    }

    func testSNISelectsTheMatchingCertificate() throws {
        let context = try server([pki.a, pki.b, pki.wildcard])
        let second = try TLSPair(server: context, client: try client(), serverName: "b.test")
        second.handshakeSucceeds()
        XCTAssertEqual(second.client.peerCertificateSubject, "CN=b.test")
        XCTAssertEqual(second.server.serverName, "b.test")

        let wildcard = try TLSPair(server: context, client: try client(), serverName: "x.w.test")
        wildcard.handshakeSucceeds()
        XCTAssertEqual(wildcard.client.peerCertificateSubject, "CN=*.w.test")

        let first = try TLSPair(server: context, client: try client(), serverName: "a.test")
        first.handshakeSucceeds()
        XCTAssertEqual(first.client.peerCertificateSubject, "CN=a.test")
    }

    func testUnknownOrMissingSNIGetsTheDefaultCertificate() throws {
        let context = try server([pki.a, pki.b])
        let unknown = try TLSPair(server: context, client: try client(verify: false), serverName: "unknown.test")
        unknown.handshakeSucceeds()
        XCTAssertEqual(unknown.client.peerCertificateSubject, "CN=a.test")
        XCTAssertEqual(unknown.server.serverName, "unknown.test")

        // A wildcard matches one label only: y.x.w.test is not *.w.test.
        let deep = try TLSPair(server: try server([pki.a, pki.wildcard]), client: try client(verify: false), serverName: "y.x.w.test")
        deep.handshakeSucceeds()
        XCTAssertEqual(deep.client.peerCertificateSubject, "CN=a.test")

        // An IP address is never sent as SNI (RFC 6066 section 3).
        let address = try TLSPair(server: context, client: try client(verify: false), serverName: "127.0.0.1")
        address.handshakeSucceeds()
        XCTAssertNil(address.server.serverName)
        XCTAssertEqual(address.client.peerCertificateSubject, "CN=a.test")
    }

    func testAnExactNameBeatsAnEarlierWildcard() throws {
        let exact = try pki.leaf("exact-x-w", names: ["x.w.test"])
        let context = try server([pki.a, pki.wildcard, try pki.certificate(exact)])
        let pair = try TLSPair(server: context, client: try client(), serverName: "x.w.test")
        pair.handshakeSucceeds()
        XCTAssertEqual(pair.client.peerCertificateSubject, "CN=x.w.test")
    }
}
