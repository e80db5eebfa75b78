@testable import GatewayConfig
import XCTest

/// `trusted_proxies`: CIDR notation (RFC 4632, RFC 4291 section 2.3), membership for IPv4, IPv6 and
/// IPv4-mapped peers, and the key's validation with key paths.
final class TrustedProxiesTests: XCTestCase {
    private func cidr(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> CIDR {
        try XCTUnwrap(CIDR(text), text, file: file, line: line)
    }

    private func problem(_ text: String) -> String? {
        if case .failure(let e) = CIDR.parse(text) { return e.message }
        return nil
    }

    // MARK: addresses

    func testAddressesReadStrictly() throws {
        XCTAssertEqual(IPAddress("192.0.2.1")?.description, "192.0.2.1")
        XCTAssertEqual(IPAddress("2001:0db8:0:0::1")?.description, "2001:db8::1")
        XCTAssertEqual(IPAddress("::ffff:192.0.2.1"), IPAddress("192.0.2.1"), "IPv4-mapped is the IPv4 address")
        XCTAssertEqual(IPAddress("::ffff:192.0.2.1")?.family, .ipv4)
        XCTAssertEqual(IPAddress("::1")?.family, .ipv6)
        for bad in ["", "unix:", "localhost", "192.0.2", "192.0.2.1.5", "192.0.2.256", "192.0.02.1", "[::1]", "::1%eth0",
                    "1:2:3:4:5:6:7:8:9", " 192.0.2.1", String(repeating: "1", count: 100)] {
            XCTAssertNil(IPAddress(bad), bad)
        }
    }

    // MARK: notation

    func testNetworksParse() throws {
        XCTAssertEqual(try cidr("10.0.0.0/8").description, "10.0.0.0/8")
        XCTAssertEqual(try cidr("192.0.2.7").description, "192.0.2.7/32", "a bare address is that one host")
        XCTAssertEqual(try cidr("0.0.0.0/0").prefixLength, 0)
        XCTAssertEqual(try cidr("2001:db8::/32").description, "2001:db8::/32")
        XCTAssertEqual(try cidr("2001:db8::1").description, "2001:db8::1/128")
        XCTAssertEqual(try cidr("::/0").prefixLength, 0)
        XCTAssertEqual(try cidr("::ffff:10.0.0.0/104"), try cidr("10.0.0.0/8"), "an IPv4-mapped network is the IPv4 network")
    }

    func testBadNetworksSayWhy() {
        XCTAssertEqual(problem("10.0.0.1/8"), "\"10.0.0.1/8\" has bits set after the first 8: did you mean 10.0.0.0/8?")
        XCTAssertEqual(problem("2001:db8::1/32"), "\"2001:db8::1/32\" has bits set after the first 32: did you mean 2001:db8::/32?")
        XCTAssertEqual(problem("10.0.0.0/33"), "the prefix length in \"10.0.0.0/33\" must be a number from 0 to 32")
        XCTAssertEqual(problem("::/129"), "the prefix length in \"::/129\" must be a number from 0 to 128")
        for bad in ["10.0.0.0/", "10.0.0.0/+8", "10.0.0.0/-1", "10.0.0.0/08", "10.0.0.0/8/8", "10.0.0.0 /8"] {
            XCTAssertNotNil(problem(bad), bad)
        }
        XCTAssertEqual(problem("[::1]/128"), "write IPv6 networks without brackets, like 2001:db8::/32, got \"[::1]/128\"")
        XCTAssertEqual(problem("fe80::%eth0/64"), "zone identifiers (%eth0) are not allowed in networks, got \"fe80::%eth0/64\"")
        XCTAssertEqual(problem("proxy.internal/32"), "expected an IP network like 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32, got \"proxy.internal/32\"")
        XCTAssertNotNil(problem("::ffff:0.0.0.0/95"))
        XCTAssertNil(CIDR("10.0.0.1/8"))
    }

    // MARK: membership

    func testIPv4Membership() throws {
        let net = try cidr("10.1.0.0/16")
        XCTAssertTrue(net.contains(try XCTUnwrap(IPAddress("10.1.0.0"))))
        XCTAssertTrue(net.contains(try XCTUnwrap(IPAddress("10.1.255.255"))))
        XCTAssertTrue(net.contains(try XCTUnwrap(IPAddress("::ffff:10.1.2.3"))), "an IPv4 peer on a dual-stack listener")
        XCTAssertFalse(net.contains(try XCTUnwrap(IPAddress("10.2.0.0"))))
        XCTAssertFalse(net.contains(try XCTUnwrap(IPAddress("10.0.255.255"))))
        XCTAssertFalse(net.contains(try XCTUnwrap(IPAddress("::a01:203"))), "an IPv6 address with the same low bits is not IPv4")
        let host = try cidr("192.0.2.7")
        XCTAssertTrue(host.contains(try XCTUnwrap(IPAddress("192.0.2.7"))))
        XCTAssertFalse(host.contains(try XCTUnwrap(IPAddress("192.0.2.6"))))
        let all = try cidr("0.0.0.0/0")
        XCTAssertTrue(all.contains(try XCTUnwrap(IPAddress("203.0.113.9"))))
        XCTAssertFalse(all.contains(try XCTUnwrap(IPAddress("2001:db8::1"))), "an IPv4 network never holds IPv6 peers")
    }

    func testIPv6Membership() throws {
        let net = try cidr("2001:db8:aa00::/40")
        XCTAssertTrue(net.contains(try XCTUnwrap(IPAddress("2001:db8:aa00::1"))))
        XCTAssertTrue(net.contains(try XCTUnwrap(IPAddress("2001:db8:aaff:ffff:ffff:ffff:ffff:ffff"))))
        XCTAssertFalse(net.contains(try XCTUnwrap(IPAddress("2001:db8:ab00::"))))
        XCTAssertFalse(net.contains(try XCTUnwrap(IPAddress("2001:db9:aa00::"))))
        let low = try cidr("2001:db8::1:0/112")  // a prefix inside the low 64 bits
        XCTAssertTrue(low.contains(try XCTUnwrap(IPAddress("2001:db8::1:ffff"))))
        XCTAssertFalse(low.contains(try XCTUnwrap(IPAddress("2001:db8::2:0"))))
        let loopback = try cidr("::1")
        XCTAssertTrue(loopback.contains(try XCTUnwrap(IPAddress("::1"))))
        XCTAssertFalse(loopback.contains(try XCTUnwrap(IPAddress("::2"))))
        XCTAssertFalse(try cidr("::/0").contains(try XCTUnwrap(IPAddress("192.0.2.1"))), "an IPv6 network never holds IPv4 peers")
    }

    func testTrustedProxiesByPeerHost() throws {
        let trusted = TrustedProxies([try cidr("10.0.0.0/8"), try cidr("2001:db8::/32")])
        XCTAssertTrue(trusted.contains(host: "10.9.8.7"))
        XCTAssertTrue(trusted.contains(host: "2001:db8::42"))
        XCTAssertTrue(trusted.contains(host: "::ffff:10.0.0.1"))
        XCTAssertFalse(trusted.contains(host: "11.0.0.1"))
        XCTAssertFalse(trusted.contains(host: "2001:db9::1"))
        XCTAssertFalse(trusted.contains(host: "unix:"), "a Unix socket peer has no address")
        XCTAssertFalse(trusted.contains(host: ""))
        XCTAssertFalse(TrustedProxies().contains(host: "10.0.0.1"), "empty: nobody is trusted")
        XCTAssertTrue(TrustedProxies().isEmpty)
    }

    // MARK: configuration

    func testKeyDefaultsToNobody() {
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal())?.configuration.trustedProxies, TrustedProxies())
        XCTAssertEqual(loadOK(ConfigTestHelpers.minimal(extra: "trusted_proxies:"))?.configuration.trustedProxies, TrustedProxies())
    }

    func testKeyReadsNetworks() throws {
        let loaded = loadOK(ConfigTestHelpers.minimal(extra: "trusted_proxies: [10.0.0.0/8, 192.0.2.7, \"2001:db8::/32\"]"))
        XCTAssertEqual(loaded?.configuration.trustedProxies.networks.map(\.description), ["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"])
        XCTAssertEqual(loaded?.warnings.filter { $0.path.hasPrefix("trusted_proxies") }.count, 0)
    }

    func testKeyErrorsCarryKeyPaths() {
        let lines = errorLines(ConfigTestHelpers.minimal(extra: """
            trusted_proxies:
              - 10.0.0.0/8
              - 10.0.0.1/8
              - proxy.internal
              - 10.0.0.0/8
              - [1]
            """))
        XCTAssertContainsLine(lines, "trusted_proxies[1]: \"10.0.0.1/8\" has bits set after the first 8: did you mean 10.0.0.0/8? (line 12, column 5)")
        XCTAssertContainsLine(lines, "trusted_proxies[2]: expected an IP network like 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32, got \"proxy.internal\" (line 13, column 5)")
        XCTAssertContainsLine(lines, "trusted_proxies[3]: 10.0.0.0/8 is already listed as trusted_proxies[0] (line 14, column 5)")
        XCTAssertEqual(lines.filter { $0.hasPrefix("trusted_proxies[4]: expected an IP network such as 10.0.0.0/8") }.count, 1, lines.joined(separator: "\n"))
        XCTAssertEqual(lines.count, 4, lines.joined(separator: "\n"))
        XCTAssertEqual(errorLines(ConfigTestHelpers.minimal(extra: "trusted_proxies: 10.0.0.0/8")).first?.hasPrefix("trusted_proxies: expected a list of IP networks"), true)
        XCTAssertContainsLine(errorLines(ConfigTestHelpers.minimal(extra: "trusted_proxys: []")), "trusted_proxys: unknown key; did you mean trusted_proxies? (line 10, column 1)")
    }

    func testTrustingEveryPeerWarns() {
        let loaded = loadOK(ConfigTestHelpers.minimal(extra: "trusted_proxies: [0.0.0.0/0, \"::/0\", 10.0.0.0/8]"))
        let warnings = loaded?.warnings.filter { $0.path.hasPrefix("trusted_proxies") }.map(\.description) ?? []
        XCTAssertEqual(warnings, [
            "trusted_proxies[0]: 0.0.0.0/0 trusts every IPv4 peer: any such client can then choose the X-Forwarded-For and X-Forwarded-Proto the upstream sees (line 10, column 19)",
            "trusted_proxies[1]: ::/0 trusts every IPv6 peer: any such client can then choose the X-Forwarded-For and X-Forwarded-Proto the upstream sees (line 10, column 30)",
        ])
    }
}
