import Foundation
import GatewayTestSupport
import XCTest

/// deploy/docker/Dockerfile and compose.yaml. No Docker daemon runs here, so: hadolint and checkov
/// find nothing (and do find the faults of a bad Dockerfile), the image's shape (multi-stage, Debian
/// 12 slim, non-root, health check) is read from the file, its HEALTHCHECK command is run against a
/// live admin listener, and compose's configuration and Redis command are checked for real.
final class DockerfileTests: XCTestCase {
    static let dockerfile = DeployTools.root.appendingPathComponent("deploy/docker/Dockerfile")
    static let compose = DeployTools.root.appendingPathComponent("deploy/docker/compose.yaml")

    /// One instruction: its keyword (upper case) and its arguments, continuation lines joined.
    struct Instruction: Equatable {
        let keyword: String
        let arguments: String
    }

    /// The instructions of a Dockerfile (comments and parser directives left out).
    static func instructions(_ text: String) -> [Instruction] {
        var result: [Instruction] = []
        var pending = ""
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.hasPrefix("#") { continue }
            if line.hasSuffix("\\") { pending += line.dropLast() + " "; continue }
            let full = (pending + line).trimmingCharacters(in: .whitespaces)
            pending = ""
            guard !full.isEmpty else { continue }
            let keyword = full.prefix { !$0.isWhitespace }
            result.append(Instruction(keyword: keyword.uppercased(),
                                      arguments: full.dropFirst(keyword.count).trimmingCharacters(in: .whitespaces)))
        }
        return result
    }

    /// The stages: each starts at a FROM.
    static func stages(_ text: String) -> [[Instruction]] {
        var stages: [[Instruction]] = []
        for instruction in instructions(text) {
            if instruction.keyword == "FROM" { stages.append([instruction]) } else if !stages.isEmpty { stages[stages.count - 1].append(instruction) }
        }
        return stages
    }

    /// The packages the final stage's `apt-get install` installs.
    static func runtimeStagePackages() throws -> Set<String> {
        let final = try XCTUnwrap(stages(try String(contentsOf: dockerfile, encoding: .utf8)).last)
        var packages = Set<String>()
        for run in final where run.keyword == "RUN" {
            for command in run.arguments.components(separatedBy: "&&") where command.contains("apt-get install") {
                let words = command.split(separator: " ").map(String.init)
                let start = (words.firstIndex(of: "install") ?? words.count) + 1
                packages.formUnion(words[min(start, words.count)...].filter { !$0.hasPrefix("-") })
            }
        }
        return packages
    }

    static let badDockerfile = """
        FROM debian:latest
        ADD https://example.com/attest-gateway /usr/local/bin/attest-gateway
        RUN apt-get update && apt-get install -y libssl3
        CMD /usr/local/bin/attest-gateway
        """

    func testHadolintFindsNothing() throws {
        let result = try DeployTools.offline("hadolint", ["--no-color", Self.dockerfile.path])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.output.trimmingCharacters(in: .whitespacesAndNewlines), "")
        // The failing variant: a Dockerfile with the usual faults.
        let dir = try DeployTools.temporaryDirectory("hadolint")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appendingPathComponent("Dockerfile")
        try Self.badDockerfile.write(to: bad, atomically: true, encoding: .utf8)
        let rejected = try DeployTools.offline("hadolint", ["--no-color", bad.path])
        XCTAssertNotEqual(rejected.status, 0, rejected.output)
        for rule in ["DL3007", "DL3015", "DL3025"] { XCTAssertTrue(rejected.output.contains(rule), "\(rule): \(rejected.output)") }
    }

    /// checkov's Dockerfile checks, JSON output: the number of failed checks.
    static func checkovFailures(_ file: URL) throws -> (failed: [String], passed: Int, output: String) {
        let result = try DeployTools.offline("checkov", ["-f", file.path, "--framework", "dockerfile", "--skip-download", "--quiet", "-o", "json"])
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], result.output)
        let results = json["results"] as? [String: Any] ?? [:]
        let failed = (results["failed_checks"] as? [[String: Any]] ?? []).compactMap { $0["check_id"] as? String }
        let summary = json["summary"] as? [String: Any] ?? [:]
        return (failed, summary["passed"] as? Int ?? 0, result.output)
    }

    func testCheckovFindsNothing() throws {
        let clean = try Self.checkovFailures(Self.dockerfile)
        XCTAssertEqual(clean.failed, [], clean.output)
        XCTAssertGreaterThan(clean.passed, 10, clean.output)
        let dir = try DeployTools.temporaryDirectory("checkov-docker")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appendingPathComponent("Dockerfile")
        try Self.badDockerfile.write(to: bad, atomically: true, encoding: .utf8)
        let rejected = try Self.checkovFailures(bad)
        XCTAssertTrue(rejected.failed.contains("CKV_DOCKER_2"), "no HEALTHCHECK: \(rejected.failed)")
        XCTAssertTrue(rejected.failed.contains("CKV_DOCKER_3"), "no USER: \(rejected.failed)")
    }

    func testImageShapeMultiStageDebianSlimNonRootWithHealthCheck() throws {
        let stages = Self.stages(try String(contentsOf: Self.dockerfile, encoding: .utf8))
        XCTAssertGreaterThanOrEqual(stages.count, 2, "a builder stage and a runtime stage")
        let builder = stages[0][0].arguments
        XCTAssertTrue(builder.hasPrefix("swift:") && builder.hasSuffix(" AS build"), builder)
        let final = try XCTUnwrap(stages.last)
        let base = final[0].arguments
        XCTAssertNotNil(base.range(of: #"^debian:12\.[0-9]+-slim$"#, options: .regularExpression), "pinned Debian 12 slim: \(base)")
        for stage in stages {
            XCTAssertFalse(stage[0].arguments.contains(":latest"), stage[0].arguments)
            XCTAssertFalse(stage.contains { $0.keyword == "ADD" }, "ADD: use COPY")
        }
        let user = try XCTUnwrap(final.last { $0.keyword == "USER" }?.arguments)
        let uid = try XCTUnwrap(Int(user.split(separator: ":")[0]), "numeric USER (Kubernetes' runAsNonRoot checks it): \(user)")
        XCTAssertGreaterThanOrEqual(uid, 10000)
        XCTAssertTrue(final.contains { $0.keyword == "HEALTHCHECK" })
        XCTAssertEqual(final.last { $0.keyword == "ENTRYPOINT" }?.arguments, #"["/usr/local/bin/attest-gateway"]"#)
        XCTAssertTrue(final.contains { $0.keyword == "COPY" && $0.arguments.hasPrefix("--from=build /pkg/bin/attest-gateway") })
        // Only the release build reaches the runtime stage, never the toolchain.
        XCTAssertFalse(final.contains { $0.arguments.contains("swift") && $0.keyword != "COPY" }, "\(final)")
    }

    /// The HEALTHCHECK's command, run as Docker would (exec form, the image's ENV), against the
    /// admin listener of a running gateway: 0 on 200; non-zero with no listener and on another answer.
    func testHealthCheckCommandAgainstALiveAdminListener() throws {
        let final = try XCTUnwrap(Self.stages(try String(contentsOf: Self.dockerfile, encoding: .utf8)).last)
        let healthcheck = try XCTUnwrap(final.first { $0.keyword == "HEALTHCHECK" }?.arguments)
        let json = try XCTUnwrap(healthcheck.range(of: "CMD ").map { String(healthcheck[$0.upperBound...]) })
        let command = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String], json)
        XCTAssertEqual(command.first, "/bin/bash")
        let env = try XCTUnwrap(final.first { $0.keyword == "ENV" && $0.arguments.hasPrefix("ATTEST_ADMIN_PORT=") })
        XCTAssertEqual(env.arguments, "ATTEST_ADMIN_PORT=9901")
        func probe(_ port: UInt16) throws -> Int32 {
            try DeployTools.run(command[0], Array(command.dropFirst()), environment: ["ATTEST_ADMIN_PORT": String(port)]).status
        }

        let dir = try DeployTools.temporaryDirectory("healthcheck")
        defer { try? FileManager.default.removeItem(at: dir) }
        let config = dir.appendingPathComponent("gateway.yaml")
        try """
            listen: 127.0.0.1:0
            admin: 127.0.0.1:0
            store: memory
            apps:
              - app_id: ABCDE12345.com.example.app
                environment: production
            upstreams:
              app: http://127.0.0.1:\(FreePort.allocate())
            routes:
              - path_prefix: /
                upstream: app
                mode: off
            """.write(to: config, atomically: true, encoding: .utf8)
        let gateway = try ChildProcess(try BuiltProducts.executable("attest-gateway"), ["--config", config.path])
        defer { gateway.stop() }
        var started: [String: Any]?
        waitFor("the gateway starts", timeout: 20) {
            started = DeployTools.jsonLines(gateway.output).first { $0["type"] as? String == "started" }
            return started != nil || !gateway.isRunning
        }
        let line = try XCTUnwrap(started, gateway.output)
        let adminPort = try XCTUnwrap((line["admin"] as? String).flatMap(DeployTools.port(in:)))
        let dataPort = try XCTUnwrap((line["listen"] as? String).flatMap(DeployTools.port(in:)))
        XCTAssertEqual(try probe(adminPort), 0, "healthy: /healthz answers 200")
        XCTAssertNotEqual(try probe(dataPort), 0, "the data listener answers /healthz with 502 (no such upstream), not 200")
        gateway.stop()
        XCTAssertNotEqual(try probe(adminPort), 0, "nothing listens any more")
    }

    func testComposeRunsGatewayRedisAndDemoUpstreamHardened() throws {
        let compose = try XCTUnwrap(try DeployTools.yamlDocuments(Self.compose).first as? [String: Any])
        let services = try XCTUnwrap(compose["services"] as? [String: [String: Any]])
        XCTAssertEqual(Set(services.keys), ["gateway", "redis", "demo-upstream"])
        let folder = Self.compose.deletingLastPathComponent()
        for (name, service) in services {
            XCTAssertEqual(service["read_only"] as? Bool, true, name)
            XCTAssertEqual(service["cap_drop"] as? [String], ["ALL"], name)
            XCTAssertEqual(service["security_opt"] as? [String], ["no-new-privileges:true"], name)
            XCTAssertNotNil(service["user"] as? String, name)
            for volume in service["volumes"] as? [String] ?? [] where volume.hasPrefix(".") {
                let source = folder.appendingPathComponent(String(volume.split(separator: ":")[0])).standardizedFileURL
                XCTAssertTrue(FileManager.default.fileExists(atPath: source.path), "\(name): \(volume)")
            }
        }
        let gateway = services["gateway"]!
        // Both attest-gateway services build the image from this repository; none pulls it.
        for name in ["gateway", "demo-upstream"] {
            let service = services[name]!
            let build = try XCTUnwrap(service["build"] as? [String: Any], name)
            let context = folder.appendingPathComponent(try XCTUnwrap(build["context"] as? String)).standardizedFileURL
            XCTAssertEqual(context.path, DeployTools.root.standardizedFileURL.path, name)
            XCTAssertEqual(build["dockerfile"] as? String, "deploy/docker/Dockerfile", name)
            XCTAssertEqual(service["image"] as? String, "attest-gateway:0.1.0", name)
            XCTAssertEqual(service["pull_policy"] as? String, "build", name)
        }
        XCTAssertEqual(services["demo-upstream"]?["entrypoint"] as? [String],
                       ["/usr/local/bin/attestctl", "demo-upstream", "--listen", "0.0.0.0:8081"])
        XCTAssertEqual(gateway["secrets"] as? [String], ["redis_password"])
        XCTAssertEqual(services["redis"]?["secrets"] as? [String], ["redis_password"])
        let secrets = try XCTUnwrap(compose["secrets"] as? [String: [String: Any]])
        XCTAssertEqual(secrets["redis_password"]?["environment"] as? String, "REDIS_PASSWORD", "the password comes from the environment, not a file here")
        let gatewayYAML = try String(contentsOf: folder.appendingPathComponent("gateway.yaml"), encoding: .utf8)
        let drain = try XCTUnwrap(ShippedConfigCheck.drainSeconds(gatewayYAML))
        let grace = try XCTUnwrap((gateway["stop_grace_period"] as? String).flatMap { Int($0.dropLast()) })
        XCTAssertGreaterThan(grace, drain, "stop_grace_period must outlast timeouts.drain")
        XCTAssertTrue(gatewayYAML.contains("redis://redis:6379"), "the gateway reaches the compose service redis")
        XCTAssertTrue(gatewayYAML.contains("http://demo-upstream:8081"))
    }

    /// The configuration compose mounts passes check-config (its password file mapped to a temporary
    /// one). Needs `store.password_file` (issue 9, "Secrets").
    func testComposeGatewayConfigurationPassesCheckConfig() throws {
        let yaml = try String(contentsOf: Self.compose.deletingLastPathComponent().appendingPathComponent("gateway.yaml"), encoding: .utf8)
        let result = try ShippedConfigCheck.check(yaml: yaml, secretFiles: ["/run/secrets/redis_password"])
        XCTAssertEqual(result.status, 0, result.output)
    }

    /// compose's Redis command, run here with its paths mapped: the secret becomes the password,
    /// deploy/redis/redis.conf loads (noeviction, append-only); the health check's command passes.
    func testComposeRedisTakesItsPasswordFromTheSecret() throws {
        let compose = try XCTUnwrap(try DeployTools.yamlDocuments(Self.compose).first as? [String: Any])
        let redis = try XCTUnwrap((compose["services"] as? [String: [String: Any]])?["redis"])
        let command = try XCTUnwrap(redis["command"] as? [String])
        XCTAssertEqual(Array(command.prefix(2)), ["sh", "-c"])
        // compose turns $$ into $.
        let script = command[2].replacingOccurrences(of: "$$", with: "$")
        let conf = DeployTools.root.appendingPathComponent("deploy/redis/redis.conf").path
        let server = try ManifestRedis(shellCommand: script, secretPath: "/run/secrets/redis_password",
                                       paths: [("/usr/local/etc/redis/redis.conf", conf)])
        try server.assertConfigured()
        let test = try XCTUnwrap((redis["healthcheck"] as? [String: Any])?["test"] as? [String])
        XCTAssertEqual(test.first, "CMD-SHELL")
        let health = test[1].replacingOccurrences(of: "$$", with: "$")
            .replacingOccurrences(of: "/run/secrets/redis_password", with: server.work.appendingPathComponent("secret").path)
            .replacingOccurrences(of: "redis-cli", with: "redis-cli -p \(server.port)")
        XCTAssertEqual(try DeployTools.run(try DeployTools.system("sh"), ["-c", health]).status, 0, health)
        server.process.stop()
        XCTAssertNotEqual(try DeployTools.run(try DeployTools.system("sh"), ["-c", health]).status, 0, "fails with Redis down")
    }
}
