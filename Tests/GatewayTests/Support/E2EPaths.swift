import Foundation
import GatewayTestSupport
import XCTest

/// Where the end-to-end tests find their helpers: the Python fixtures in the repository, the
/// reference device in ../shared/tools and the built `attest-gateway` binary.
enum E2EPaths {
    /// Tests/GatewayHTTPTests/Fixtures/upstream.py (echoes method, target, headers, body SHA-256).
    static var upstreamScript: String {
        SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayHTTPTests/Fixtures/upstream.py").path
    }

    /// Tests/GatewayHTTPTests/Fixtures/rawclient.py (exact bytes out, everything back).
    static var rawClientScript: String {
        SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayHTTPTests/Fixtures/rawclient.py").path
    }

    /// Tests/GatewayHTTPTests/Fixtures/h2client.py (HTTP/2 requests and raw frames, PyPI h2 + hyperframe).
    static var h2ClientScript: String {
        SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayHTTPTests/Fixtures/h2client.py").path
    }

    /// Tests/GatewayTests/Fixtures/race.py (the same request on several connections at once).
    static var raceScript: String {
        SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayTests/Fixtures/race.py").path
    }

    /// Tests/GatewayTests/Fixtures/load_client.py (continuous requests; a TLS connection held open).
    static var replyDroppingProxyScript: String {
        SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayTests/Fixtures/reply_dropping_proxy.py").path
    }

    static var loadClientScript: String {
        SharedFixtures.packageRoot.appendingPathComponent("Tests/GatewayTests/Fixtures/load_client.py").path
    }

    /// ../shared/tools/ref_device.py, or XCTSkip when ../shared is absent.
    static func refDevice() throws -> String {
        guard let tools = SharedFixtures.toolsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let path = tools.appendingPathComponent("ref_device.py").path
        guard FileManager.default.fileExists(atPath: path) else { throw XCTSkip(SharedFixtures.absentMessage) }
        return path
    }

    /// Whether ../shared/tools/ref_device.py is there.
    static var hasRefDevice: Bool { (try? refDevice()) != nil }

    /// The `attest-gateway` executable built next to the test bundle (`swift build --build-tests`).
    static func gatewayBinary() throws -> String { try BuiltProducts.executable("attest-gateway") }

    /// A fresh temporary folder.
    static func temporaryDirectory(_ label: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("attest-e2e-\(label)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}
