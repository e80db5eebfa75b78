@testable import Gateway
import GatewayConfig
import GatewayHTTP
import XCTest

/// The forwarding family (`ForwardingHeaders`, DESIGN.md section 5): believed from trusted proxies
/// only, replaced or removed for everyone else.
final class ForwardingHeadersTests: XCTestCase {
    /// Everything a client might send to pose as a proxy.
    static let claims: [(String, String)] = [
        ("X-Forwarded-For", "203.0.113.9"), ("x-forwarded-for", "198.51.100.1"), ("X-Forwarded-Proto", "https"),
        ("Forwarded", "for=203.0.113.9;proto=https"), ("X-Real-IP", "203.0.113.9"), ("X-Forwarded-Host", "admin.internal"),
        ("X-FORWARDED-PORT", "443"), ("X-Forwarded-Prefix", "/admin"), ("X-Keep", "yes"),
        // CGI/WSGI backends read these as HTTP_X_FORWARDED_FOR and HTTP_X_REAL_IP.
        ("X_Forwarded_For", "203.0.113.10"), ("x_real_ip", "203.0.113.10"), ("X-Forwarded_Host", "admin.internal"),
    ]

    private func connection(_ remote: String, secure: Bool = false) -> HTTPConnectionInfo {
        HTTPConnectionInfo(id: 1, remoteAddress: remote, localAddress: "127.0.0.1:8080", isSecure: secure)
    }

    private func applied(_ trusted: [String], from remote: String, secure: Bool = false,
                         _ fields: [(String, String)] = ForwardingHeadersTests.claims) throws -> HTTPHeaders {
        var headers = try HTTPHeaders(fields)
        let forwarding = ForwardingHeaders(trusted: TrustedProxies(try trusted.map { try XCTUnwrap(CIDR($0)) }))
        forwarding.apply(to: &headers, connection: connection(remote, secure: secure))
        return headers
    }

    func testUntrustedClientClaimsAreDroppedOrReplaced() throws {
        for trusted in [[], ["10.0.0.0/8", "2001:db8::/32"]] {
            let headers = try applied(trusted, from: "192.0.2.10:5555")
            XCTAssertEqual(headers.values("X-Forwarded-For"), ["192.0.2.10"], "\(trusted)")
            XCTAssertEqual(headers.values("X-Forwarded-Proto"), ["http"])
            for name in ["Forwarded", "X-Real-IP", "X-Forwarded-Host", "X-Forwarded-Port", "X-Forwarded-Prefix",
                         "X_Forwarded_For", "X_Real_IP", "X-Forwarded_Host"] {
                XCTAssertEqual(headers.count(of: name), 0, name)
            }
            XCTAssertEqual(headers.values("X-Keep"), ["yes"], "other fields pass")
        }
        XCTAssertEqual(try applied([], from: "192.0.2.10:5555", secure: true).values("X-Forwarded-Proto"), ["https"],
                       "the connection's own scheme")
        XCTAssertEqual(try applied([], from: "[2001:db8::7]:5555").values("X-Forwarded-For"), ["2001:db8::7"])
        XCTAssertEqual(try applied(["0.0.0.0/0"], from: "unix:").values("X-Forwarded-For"), ["unix"],
                       "a Unix socket peer is never a trusted proxy")
        XCTAssertEqual(try applied(["0.0.0.0/0"], from: "unix:").count(of: "X-Real-IP"), 0)
    }

    func testTrustedProxyIsBelievedAndAppendedTo() throws {
        for (network, peer, host) in [("10.0.0.0/8", "10.1.2.3:4000", "10.1.2.3"), ("2001:db8::/32", "[2001:db8::5]:443", "2001:db8::5"),
                                      ("10.0.0.0/8", "[::ffff:10.1.2.3]:4000", "::ffff:10.1.2.3")] {
            let headers = try applied([network], from: peer)
            XCTAssertEqual(headers.values("X-Forwarded-For"), ["203.0.113.9, 198.51.100.1, \(host)"], peer)
            XCTAssertEqual(headers.values("X-Forwarded-Proto"), ["https"], "the proxy's scheme is believed")
            XCTAssertEqual(headers.values("Forwarded"), ["for=203.0.113.9;proto=https"])
            XCTAssertEqual(headers.values("X-Real-IP"), ["203.0.113.9"])
            XCTAssertEqual(headers.values("X-Forwarded-Host"), ["admin.internal"])
            XCTAssertEqual(headers.values("X-Forwarded-Port"), ["443"])
        }
    }

    func testTrustedProxyClaimsOutsideTheRulesFallBack() throws {
        let none = try applied(["10.0.0.0/8"], from: "10.0.0.1:1", [("X-Keep", "yes")])
        XCTAssertEqual(none.values("X-Forwarded-For"), ["10.0.0.1"], "no chain: just the peer")
        XCTAssertEqual(none.values("X-Forwarded-Proto"), ["http"], "no claim: the connection's scheme")
        XCTAssertEqual(try applied(["10.0.0.0/8"], from: "10.0.0.1:1", [("X-Forwarded-Proto", "HTTPS")]).values("X-Forwarded-Proto"), ["https"])
        XCTAssertEqual(try applied(["10.0.0.0/8"], from: "10.0.0.1:1", [("X-Forwarded-Proto", "ftp")]).values("X-Forwarded-Proto"), ["http"])
        XCTAssertEqual(try applied(["10.0.0.0/8"], from: "10.0.0.1:1", [("X-Forwarded-Proto", "https, http")]).values("X-Forwarded-Proto"), ["http"])
        XCTAssertEqual(try applied(["10.0.0.0/8"], from: "10.0.0.1:1", secure: true,
                                   [("X-Forwarded-Proto", "https"), ("X-Forwarded-Proto", "http")]).values("X-Forwarded-Proto"), ["https"],
                       "two claims: neither is believed")
        XCTAssertEqual(try applied(["10.0.0.0/8"], from: "10.0.0.1:1", [("X-Forwarded-For", "")]).values("X-Forwarded-For"), ["10.0.0.1"])
    }

    // MARK: - The derived client address (rate limit, access log)

    private func client(_ trusted: [String], from remote: String, _ xff: [String]) throws -> String {
        let headers = try HTTPHeaders(xff.map { ("X-Forwarded-For", $0) })
        let forwarding = ForwardingHeaders(trusted: TrustedProxies(try trusted.map { try XCTUnwrap(CIDR($0)) }))
        return forwarding.clientAddress(headers: headers, connection: connection(remote))
    }

    func testClientAddressIsThePeerUnlessThePeerIsATrustedProxy() throws {
        XCTAssertEqual(try client([], from: "192.0.2.10:5555", ["203.0.113.9"]), "192.0.2.10", "nobody trusted: the peer")
        XCTAssertEqual(try client(["10.0.0.0/8"], from: "192.0.2.10:5555", ["203.0.113.9"]), "192.0.2.10",
                       "an untrusted peer's claim is ignored")
        XCTAssertEqual(try client(["10.0.0.0/8"], from: "10.0.0.1:5555", []), "10.0.0.1", "a proxy that sent none: itself")
    }

    func testClientAddressIsTheRightmostUntrustedHop() throws {
        let trusted = ["10.0.0.0/8", "2001:db8::/32"]
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["203.0.113.9"]), "203.0.113.9")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["198.51.100.7, 203.0.113.9, 10.9.9.9"]), "203.0.113.9",
                       "a spoofed leftmost entry is not the client; trusted hops on the right are skipped")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["198.51.100.7", "203.0.113.9,10.2.2.2"]), "203.0.113.9",
                       "every copy, in order")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["10.3.3.3, 10.2.2.2"]), "10.3.3.3", "all trusted: the leftmost")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["[2001:db9::1]:443, 2001:db8::5"]), "2001:db9::1", "ports and brackets")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["203.0.113.9:8443"]), "203.0.113.9")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["::ffff:203.0.113.9"]), "203.0.113.9", "canonical text")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["203.0.113.9, unknown, 10.2.2.2"]), "10.2.2.2",
                       "garbage ends the walk at the last vouched hop")
        XCTAssertEqual(try client(trusted, from: "10.0.0.1:1", ["203.0.113.9, 10.2.2.2:x"]), "10.0.0.1")
    }
}
