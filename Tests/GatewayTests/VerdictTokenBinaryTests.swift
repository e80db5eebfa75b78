import Foundation
import GatewayTestSupport
import XCTest

/// The `attest-gateway` executable with generated verdict keys in a real redis-server: it logs the
/// keys it adds, publishes them on both listeners, keeps them across a reload (SIGHUP), and a second
/// process on the same Redis publishes the same key set (one set per fleet).
final class VerdictTokenBinaryTests: XCTestCase {
    func testReplicasShareTheGeneratedKeySetAcrossAReload() throws {
        let redis = try RedisServer()
        defer { redis.stop() }
        let upstream = try UpstreamProcess()
        defer { upstream.stop() }
        let folder = try E2EPaths.temporaryDirectory("verdict-binary")
        defer { try? FileManager.default.removeItem(at: folder) }
        let yaml = """
            listen: 127.0.0.1:0
            admin: 127.0.0.1:0
            store: \(redis.url)
            apps: [{app_id: ABCDE12345.com.example.app}]
            upstreams: {app: "http://127.0.0.1:\(upstream.port)"}
            routes: [{path_prefix: /, upstream: app, mode: monitor}]
            verdict_token: {rotation: 1h, publish_ahead: 10m, store_key: "fleet:verdict"}
            """
        let first = try ConfiguredGateway(yaml: yaml, directory: folder, name: "first.yaml")
        var published: [String] = []
        waitFor("the first replica's JWKS", timeout: 15) {
            published = (try? VerdictTokenPythonTests.jwksKids("http://127.0.0.1:\(first.port)/app-attest/v1/jwks.json")) ?? []
            return !published.isEmpty
        }
        XCTAssertEqual(published.count, 1)
        XCTAssertEqual(first.lines("verdict_key_added").map { $0["kid"] as? String }, published, "the replica that created the set logs its key")
        XCTAssertEqual(try VerdictTokenPythonTests.jwksKids("http://127.0.0.1:\(first.adminPort ?? 0)/jwks.json"), published)

        let second = try ConfiguredGateway(yaml: yaml, directory: folder, name: "second.yaml")
        var secondKeys: [String] = []
        waitFor("the second replica's JWKS", timeout: 15) {
            secondKeys = (try? VerdictTokenPythonTests.jwksKids("http://127.0.0.1:\(second.port)/app-attest/v1/jwks.json")) ?? []
            return !secondKeys.isEmpty
        }
        XCTAssertEqual(secondKeys, published, "one key set for the fleet")
        XCTAssertEqual(second.lines("verdict_key_added").count, 0, "the second replica created nothing")

        // Tokens of either replica carry the fleet's key.
        let reply = try Curl.request(port: second.port, method: "GET", target: "/x")
        let token = ((reply.json["headers"] as? [[String]]) ?? []).first { $0.first?.lowercased() == "app-attest-verdict-token" }?[1]
        XCTAssertEqual(token.flatMap(VerdictTokenPythonTests.kid), published.first)

        // A reload keeps the keys (and the schedule).
        XCTAssertEqual(first.reload()["type"] as? String, "config_reloaded")
        XCTAssertEqual(try VerdictTokenPythonTests.jwksKids("http://127.0.0.1:\(first.port)/app-attest/v1/jwks.json"), published)
        XCTAssertEqual(first.lines("verdict_key_added").count, 1)
    }
}
