@testable import GatewayIO
import XCTest
#if canImport(Glibc)
import Glibc
#endif

/// `SocketAddress.description`: IPv4 written without inet_ntop, checked against inet_ntop's own text
/// (the reference) for edge and random addresses and ports; IPv6 and Unix addresses as before.
final class SocketAddressDescriptionTests: XCTestCase {
    private func viaInetNtop(_ octets: [UInt8], _ port: UInt16) -> String {
        var addr = in_addr()
        withUnsafeMutableBytes(of: &addr) { raw in for (i, o) in octets.enumerated() { raw[i] = o } }
        var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN) + 1)
        inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count))
        return String(cString: buffer) + ":\(port)"
    }

    func testIPv4MatchesInetNtop() throws {
        var cases: [([UInt8], UInt16)] = [([0, 0, 0, 0], 0), ([255, 255, 255, 255], 65535), ([127, 0, 0, 1], 8080),
                                          ([10, 1, 20, 255], 9), ([100, 99, 10, 9], 10000), ([1, 2, 3, 4], 99)]
        var rng = SystemRandomNumberGenerator()
        for _ in 0..<2000 {
            cases.append(((0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) }, UInt16.random(in: 0...65535, using: &rng)))
        }
        for (octets, port) in cases {
            let expected = viaInetNtop(octets, port)
            let address = try XCTUnwrap(SocketAddress.literal(host: octets.map(String.init).joined(separator: "."), port: port))
            XCTAssertEqual(address.description, expected)
        }
    }

    func testIPv6AndUnix() throws {
        XCTAssertEqual(try XCTUnwrap(SocketAddress.literal(host: "::1", port: 443)).description, "[::1]:443")
        XCTAssertEqual(try XCTUnwrap(SocketAddress.literal(host: "2001:db8::7", port: 1)).description, "[2001:db8::7]:1")
        XCTAssertEqual(try SocketAddress.unix(path: "/run/gw.sock").description, "unix:/run/gw.sock")
    }
}
