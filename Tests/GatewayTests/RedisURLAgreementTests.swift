import Foundation
import GatewayConfig
import GatewayTestSupport
import XCTest

/// One Redis URL grammar for the configuration (`store:`) and for `attestctl keys --store`: every URL
/// one takes the other takes (and reaches the same redis-server, over TCP or its Unix socket), every
/// URL one refuses the other refuses, and neither echoes a password.
final class RedisURLAgreementTests: E2ETestCase {
    override class var needsRefDevice: Bool { false }

    /// A keyId no device has: `keys show` answers "no key record" (exit 1) once it reached the store.
    private let absentKeyId = String(repeating: "A", count: 43) + "="

    private func attestctl(_ arguments: [String], in directory: URL? = nil) throws -> (status: Int32, output: String) {
        try ChildProcess.run(try BuiltProducts.executable("attestctl"), arguments, currentDirectory: directory)
    }

    /// The configuration's verdict on `url` as `store:`: nil when it loads, else the message at `store`.
    private func configRefusal(_ url: String, base: String) -> String? {
        let yaml = """
            listen: 127.0.0.1:8080
            store: "\(url)"
            apps:
              - app_id: ABCDE12345.com.example.app
            upstreams:
              app: http://127.0.0.1:8081
            routes:
              - path_prefix: /
                upstream: app
            """
        do {
            _ = try GatewayConfiguration.parse(yaml: yaml, baseDirectory: base)
            return nil
        } catch {
            let issues = error.issues.filter { $0.path == "store" }
            XCTAssertEqual(issues.count, error.issues.count, "\(url): only store is at fault: \(error)")
            return issues.first?.message ?? "\(error)"
        }
    }

    func testAcceptedByBothAndReachTheStore() throws {
        let redis = try XCTUnwrap(env.redis)
        let folder = redis.directory
        let accepted = [
            "redis://127.0.0.1:\(redis.port)/0", "redis://127.0.0.1:\(redis.port)", "redis://127.0.0.1:\(redis.port)/",
            "unix:\(redis.socketPath)", "unix://\(redis.socketPath)", "unix:\(redis.socketPath)?db=0",
            "unix:redis.sock",  // relative: the configuration's folder, attestctl's current directory
        ]
        for url in accepted {
            XCTAssertNil(configRefusal(url, base: folder.path), "check-config refuses \(url)")
            let shown = try attestctl(["keys", "show", "--store", url, "--key-id", absentKeyId], in: folder)
            XCTAssertEqual(shown.status, 1, "\(url): \(shown.output)")
            XCTAssertTrue(shown.output.contains("no key record"), "\(url) reached the store: \(shown.output)")
        }
    }

    func testRefusedByBoth() throws {
        let redis = try XCTUnwrap(env.redis)
        let port = redis.port
        let refused = [
            "REDISS://127.0.0.1:\(port)", "rediss://127.0.0.1:\(port)/x", "http://127.0.0.1:\(port)", "memcached://x", "REDIS://127.0.0.1:\(port)",
            "redis://", "redis://:\(port)", "redis://127.0.0.1:0", "redis://127.0.0.1:65536", "redis://127.0.0.1:x",
            "redis://::1:\(port)", "redis://[::1", "redis://[::g]:\(port)", "redis://bad_host:\(port)",
            "redis://127.0.0.1:\(port)/x", "redis://127.0.0.1:\(port)/-1", "redis://127.0.0.1:\(port)/+1",
            "redis://127.0.0.1:\(port)/01", "redis://127.0.0.1:\(port)/2147483648",
            "redis://127.0.0.1:\(port)?db=1", "redis://127.0.0.1:\(port)#x", "redis://127.0.0.1:\(port)?",
            "redis://secret@127.0.0.1:\(port)", "redis://:s%zzecret@127.0.0.1:\(port)",
            "unix:", "unix://", "unix://relative.sock", "unix://host/tmp/r.sock",
            "unix:\(redis.socketPath)?timeout=1", "unix:\(redis.socketPath)?db=x", "unix:\(redis.socketPath)?db=1&db=2",
            "unix:\(redis.socketPath)?", "unix:/" + String(repeating: "s", count: 120),
            "redis+cluster://127.0.0.1:\(port)/1", "redis+cluster://127.0.0.1:\(port),", "redis+cluster://127.0.0.1:\(port),127.0.0.1:\(port)",
            "redis+cluster://127.0.0.1:\(port)?db=0", "redis+cluster://secret@127.0.0.1:\(port)", "rediss+cluster://127.0.0.1:\(port)/1",
            "rediss+sentinel://127.0.0.1:\(port)/main", "redis+sentinel://127.0.0.1:\(port)", "redis+sentinel://127.0.0.1:\(port)/a b",
        ]
        for url in refused {
            let config = configRefusal(url, base: redis.directory.path)
            XCTAssertNotNil(config, "check-config takes \(url)")
            let shown = try attestctl(["keys", "show", "--store", url, "--key-id", absentKeyId], in: redis.directory)
            XCTAssertEqual(shown.status, 2, "attestctl takes \(url): \(shown.output)")
            XCTAssertTrue(shown.output.contains("--store"), "\(url): \(shown.output)")
            for text in [config ?? "", shown.output] where url.contains("secret") {
                XCTAssertFalse(text.contains("secret"), "the password is echoed: \(text)")
            }
        }
    }

    /// `rediss://` is taken by both and reaches a TLS-only redis-server with `--tls-ca` (attestctl)
    /// the way `store.tls.ca` does; without the CA (system store) attestctl cannot reach it; TLS
    /// options on a plain URL are a usage error.
    func testRedissReachesATLSServer() throws {
        let server = try RedisTLSServer()
        let url = "rediss://127.0.0.1:\(server.port)/0"
        XCTAssertNil(configRefusal(url, base: "/tmp"))
        let root = server.pki.root.certificate
        let shown = try attestctl(["keys", "show", "--store", url, "--tls-ca", root, "--key-id", absentKeyId])
        XCTAssertEqual(shown.status, 1, shown.output)
        XCTAssertTrue(shown.output.contains("no key record"), shown.output)
        let unverified = try attestctl(["keys", "show", "--store", url, "--key-id", absentKeyId])
        XCTAssertNotEqual(unverified.status, 0, unverified.output)
        XCTAssertFalse(unverified.output.contains("no key record"), "reached a store whose certificate it cannot verify: \(unverified.output)")
        let plain = try attestctl(["keys", "show", "--store", "redis://127.0.0.1:\(server.port)/0", "--tls-ca", root, "--key-id", absentKeyId])
        XCTAssertEqual(plain.status, 2, plain.output)
        XCTAssertTrue(plain.output.contains("rediss://"), plain.output)
        let half = try attestctl(["keys", "show", "--store", url, "--tls-cert", root, "--key-id", absentKeyId])
        XCTAssertEqual(half.status, 2, half.output)
    }

    /// A password given in the URL is never shown, by either side, even when the URL is refused.
    func testPasswordNeverEchoed() throws {
        let url = "redis://:hunter2@127.0.0.1:0/0"
        let config = try XCTUnwrap(configRefusal(url, base: "/tmp"))
        XCTAssertFalse(config.contains("hunter2"), config)
        let shown = try attestctl(["keys", "show", "--store", url, "--key-id", absentKeyId])
        XCTAssertEqual(shown.status, 2, shown.output)
        XCTAssertFalse(shown.output.contains("hunter2"), shown.output)
    }
}
