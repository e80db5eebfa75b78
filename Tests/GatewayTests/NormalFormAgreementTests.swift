import Foundation
import GatewayConfig
import XCTest

/// `check-config` and the running gateway apply one normal-form rule (DESIGN.md section 5): every
/// path the gateway refuses as a request-target, the configuration refuses as a route path (with its
/// YAML path), and every path the configuration accepts, the gateway accepts. One table, both sides.
final class NormalFormAgreementTests: E2ETestCase {
    override class var storeKind: E2EEnvironment.StoreKind { .memory }
    override class var needsRefDevice: Bool { false }

    /// Paths in normal form.
    static let accepted = [
        "/", "/a", "/a/", "/v1/purchases", "/a:b@c!$&'()*+,=", "/%20x", "/a%3Ab", "/%25", "/%C3%A9",
        "/~user/-_.x", "/.well-known/x", "/a..b/...", "/%2B", "/%3B", "/%22",
    ]

    /// Paths the normal form refuses: empty and dot segments, encoded unreserved characters and
    /// separators (`%2F`, `%5C`, control bytes), malformed or lower-case escapes, bytes outside `pchar`,
    /// path parameters (`;`), fragments, and targets that are not in origin-form.
    static let refused = [
        "//", "/a//b", "/.", "/..", "/a/./b", "/a/../b", "/a/..",
        "/%41", "/a%2E", "/%7E", "/%5F", "/%30",
        "/a%2Fb", "/%5C", "/a%5Cb", "/%00", "/%0A", "/%1F", "/%7F",
        "/a%2fb", "/%3a", "/%c3%a9",
        "/%", "/%4", "/%G1", "/%%41",
        "/a\\b", "/\"", "/{x}", "/a|b", "/a^", "/a`", "/[x]", "/é", "/a<b>",
        "/a#frag", "/admin;x/secret", "/a;b=c", "/;",
        "*", "a/b", "http://example.com/a",
    ]

    /// The route path as YAML (double-quoted, so every byte reaches the validator as written).
    private static func yamlString(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// The configuration's verdict on `path` as `routes[0].<key>`: nil when it loads, else the message.
    private func configRefusal(_ path: String, key: String) -> String? {
        let yaml = """
            listen: 127.0.0.1:8080
            apps:
              - app_id: ABCDE12345.com.example.app
            upstreams:
              app: http://127.0.0.1:8081
            routes:
              - \(key): \(Self.yamlString(path))
                upstream: app
            """
        do {
            _ = try GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp")
            return nil
        } catch {
            let issues = error.issues.filter { $0.path == "routes[0].\(key)" }
            XCTAssertEqual(issues.count, error.issues.count, "\(path): only routes[0].\(key) is at fault: \(error)")
            return issues.first?.message ?? "\(error)"
        }
    }

    /// The running gateway's verdict on `path` as a request-target: the 400 answer's error code when
    /// it refuses it, nil when it takes it further (any other status: 404 no_route here).
    private func runtimeRefusal(_ path: String) throws -> String? {
        let result = try RawClient.run(port: env.port, [.send("GET \(path) HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")])
        let reply = try XCTUnwrap(result.replies.first, "\(path): no answer: \(result.raw)")
        return reply.status == 400 ? (reply.errorCode ?? "400") : nil
    }

    func testTableIsConsistent() {
        XCTAssertTrue(Set(Self.accepted).isDisjoint(with: Set(Self.refused)))
    }

    func testAcceptedByBoth() throws {
        for path in Self.accepted {
            XCTAssertNil(try runtimeRefusal(path), "the gateway refuses \(path)")
            XCTAssertNil(configRefusal(path, key: "path"), "check-config refuses path \(path)")
            if path == "/" || !path.hasSuffix("/") {
                XCTAssertNil(configRefusal(path, key: "path_prefix"), "check-config refuses path_prefix \(path)")
            }
        }
    }

    func testRefusedByBoth() throws {
        for path in Self.refused {
            let runtime = try runtimeRefusal(path)
            XCTAssertNotNil(runtime, "the gateway takes \(path)")
            XCTAssertNotNil(configRefusal(path, key: "path"), "check-config takes path \(path) (the gateway answers \(runtime ?? "-"))")
            XCTAssertNotNil(configRefusal(path, key: "path_prefix"), "check-config takes path_prefix \(path) (the gateway answers \(runtime ?? "-"))")
        }
    }
}
