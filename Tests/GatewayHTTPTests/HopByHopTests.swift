@testable import GatewayHTTP
import XCTest

/// `HopByHop`: the one list of fields never forwarded, and the removal of the fields a previous hop
/// named in `Connection` (RFC 9110 section 7.6.1).
final class HopByHopTests: XCTestCase {
    private func isHopByHop(_ name: String) -> Bool {
        Array(name.utf8).withUnsafeBytes { HopByHop.isHopByHop($0) }
    }

    func testEveryListedNameMatchesInAnyCase() {
        for name in HopByHop.fieldNames {
            XCTAssertTrue(isHopByHop(name), name)
            XCTAssertTrue(isHopByHop(name.uppercased()), name)
        }
        XCTAssertTrue(isHopByHop("HTTP2-Settings"))
        XCTAssertTrue(isHopByHop("Proxy-Authorization"))
        XCTAssertTrue(isHopByHop("tE"))
    }

    func testOtherNamesDoNotMatch() {
        // Same lengths as listed names, prefixes, suffixes and near misses.
        for name in ["", "t", "tx", "accept", "cookie", "user-agent", "content-type", "content-lengths", "content-lengt",
                     "http2-setting", "x-connection", "connection ", "upgrades", "app-attest-key-id", "authorization",
                     "proxy-authorizatio", "transfer-encodinG-x", String(repeating: "a", count: 200)] {
            XCTAssertFalse(isHopByHop(name), name)
        }
    }

    func testConnectionOptionsRemoveTheNamedFieldsOnly() throws {
        var headers = try HTTPHeaders([
            ("Host", "h"), ("Connection", "close, X-One"), ("x-one", "1"), ("X-ONE", "again"),
            ("Connection", " x-two ,, keep-alive"), ("X-Two", "2"), ("Keep-Alive", "timeout=5"), ("X-Three", "3"),
        ])
        HopByHop.removeConnectionOptions(&headers)
        XCTAssertEqual(headers.map(\.name), ["Host", "Connection", "Connection", "Keep-Alive", "X-Three"],
                       "every copy of every named field goes; Connection itself stays for the writer to drop")
    }

    func testWithoutOptionsNothingChanges() throws {
        let original = try HTTPHeaders([("Host", "h"), ("Connection", "keep-alive, close"), ("X-Close", "kept")])
        var headers = original
        HopByHop.removeConnectionOptions(&headers)
        XCTAssertEqual(headers, original)
    }
}
