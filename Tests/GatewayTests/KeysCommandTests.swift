import Foundation
import GatewayTestSupport
import XCTest

/// `attestctl keys show|revoke|delete` (exit 0 ok, 1 not found, 2 usage, 3 store unavailable) against the gateway's real Redis: an operator revokes or
/// deletes a key the gateway attested, and the gateway answers accordingly.
final class KeysCommandTests: E2ETestCase {
    private func attestctl(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let binary = try BuiltProducts.executable("attestctl")
        return try ChildProcess.run(binary, arguments)
    }

    func testShowRevokeDelete() throws {
        let redis = try XCTUnwrap(env.redis)
        let device = try env.attestedDevice(.ref)
        XCTAssertEqual(try env.send(try env.signedRequest(device, target: "/v1/protected/k", counter: 1)).status, 200)
        let store = ["--store", redis.url, "--key-id", device.keyId]

        let shown = try attestctl(["keys", "show"] + store)
        XCTAssertEqual(shown.status, 0, shown.output)
        let record = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(shown.output.utf8)) as? [String: Any], shown.output)
        XCTAssertEqual(record["keyId"] as? String, device.keyId)
        XCTAssertEqual(record["counter"] as? Int, 1)
        XCTAssertEqual(record["status"] as? String, "active")
        XCTAssertEqual(record["trustTier"] as? String, "app_attest")

        let revoked = try attestctl(["keys", "revoke", "--reason", "stolen device", "--operator", "oncall"] + store)
        XCTAssertEqual(revoked.status, 0, revoked.output)
        let audited = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(try attestctl(["keys", "show"] + store).output.utf8)) as? [String: Any])
        XCTAssertEqual(audited["status"] as? String, "revoked")
        XCTAssertEqual(audited["revokedReason"] as? String, "stolen device")
        XCTAssertEqual(audited["revokedBy"] as? String, "oncall")
        assertRefusal(try env.send(try env.signedRequest(device, target: "/v1/protected/k", counter: 2)),
                      status: 403, code: "key_revoked", action: "deny")

        let deleted = try attestctl(["keys", "delete"] + store)
        XCTAssertEqual(deleted.status, 0, deleted.output)
        XCTAssertTrue(deleted.output.contains("\"deleted\" : true") || deleted.output.contains("\"deleted\": true"), deleted.output)
        let gone = try attestctl(["keys", "show"] + store)
        XCTAssertEqual(gone.status, 1)
        XCTAssertTrue(gone.output.contains("no key record"), gone.output)
    }

    func testStoreOutageAndBadKeyId() throws {
        let dead = try ReservedPort()
        defer { withExtendedLifetime(dead) {} }
        let unreachable = try attestctl(["keys", "show", "--store", "redis://127.0.0.1:\(dead.port)/0",
                                         "--key-id", String(repeating: "A", count: 43) + "="])
        XCTAssertEqual(unreachable.status, 3, "exit 3: store unavailable")
        XCTAssertTrue(unreachable.output.contains("store_unavailable(notConnected): "), unreachable.output)
        XCTAssertEqual(unreachable.output.components(separatedBy: "store_unavailable").count, 2,
                       "the code once, then the reason: \(unreachable.output)")
        let short = try attestctl(["keys", "show", "--store", "redis://127.0.0.1:1/0", "--key-id", "AAAA"])
        XCTAssertEqual(short.status, 2)
    }
}
