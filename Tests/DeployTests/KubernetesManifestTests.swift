import Foundation
import GatewayTestSupport
import XCTest

/// deploy/kubernetes/*.yaml: valid against the Kubernetes schemas (kubernetes-validate, strict),
/// no checkov finding without a justification in the manifest, ConfigMaps holding configurations that
/// pass check-config, hardened pods whose probes, preStop and grace period match the gateway's
/// drain, and a Redis that takes its password from the Secret.
final class KubernetesManifestTests: XCTestCase {
    static let folder = DeployTools.root.appendingPathComponent("deploy/kubernetes")

    static func manifests() throws -> [URL] {
        try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { $0.pathExtension == "yaml" }.sorted { $0.path < $1.path }
    }

    /// Every object of every manifest, with the file it came from.
    static func objects() throws -> [(file: String, object: [String: Any])] {
        try manifests().flatMap { file in
            try DeployTools.yamlDocuments(file).compactMap { $0 as? [String: Any] }.map { (file.lastPathComponent, $0) }
        }
    }

    static func kind(_ object: [String: Any]) -> String { object["kind"] as? String ?? "" }
    static func name(_ object: [String: Any]) -> String { (object["metadata"] as? [String: Any])?["name"] as? String ?? "" }

    func testEveryManifestIsValidAgainstTheKubernetesSchemas() throws {
        let files = try Self.manifests()
        XCTAssertEqual(Set(files.map(\.lastPathComponent)), ["namespace.yaml", "redis.yaml", "demo-upstream.yaml", "gateway.yaml", "sidecar.yaml"])
        let result = try DeployTools.offline("kubernetes-validate", ["--strict"] + files.map(\.path))
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertFalse(result.output.contains("ERROR"), result.output)
        // The failing variant: a misspelt field and a wrong type.
        let dir = try DeployTools.temporaryDirectory("kubeval")
        defer { try? FileManager.default.removeItem(at: dir) }
        let bad = dir.appendingPathComponent("bad.yaml")
        try """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: x}
            spec:
              selector: {matchLabels: {a: b}}
              template:
                metadata: {labels: {a: b}}
                spec:
                  terminationGracePeriodSeconds: forty
                  containers:
                    - name: x
                      image: x:1
                      securityContex: {runAsNonRoot: true}
            """.write(to: bad, atomically: true, encoding: .utf8)
        let rejected = try DeployTools.offline("kubernetes-validate", ["--strict", bad.path])
        XCTAssertNotEqual(rejected.status, 0, rejected.output)
        XCTAssertTrue(rejected.output.contains("securityContex"), rejected.output)
    }

    /// checkov over the folder, JSON output: failed check ids, skipped checks with their comments.
    static func checkov(_ folder: URL) throws -> (failed: [String], skipped: [(id: String, comment: String)], passed: Int, output: String) {
        let result = try DeployTools.offline("checkov", ["-d", folder.path, "--framework", "kubernetes", "--skip-download", "--quiet", "-o", "json"])
        let json = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], result.output)
        let results = json["results"] as? [String: Any] ?? [:]
        let failed = (results["failed_checks"] as? [[String: Any]] ?? []).map { "\($0["check_id"] ?? "?") \($0["resource"] ?? "?")" }
        let skipped = (results["skipped_checks"] as? [[String: Any]] ?? []).map {
            (id: $0["check_id"] as? String ?? "", comment: ($0["check_result"] as? [String: Any])?["suppress_comment"] as? String ?? "")
        }
        let passed = (json["summary"] as? [String: Any])?["passed"] as? Int ?? 0
        return (failed, skipped, passed, result.output)
    }

    func testCheckovFindsNothingUnjustified() throws {
        let result = try Self.checkov(Self.folder)
        XCTAssertEqual(result.failed, [], "checkov failures (fix them, or justify them in the manifest)")
        XCTAssertGreaterThan(result.passed, 100, result.output)
        for skip in result.skipped {
            XCTAssertTrue(skip.comment.count > 20 && skip.comment != "No comment provided",
                          "\(skip.id) is skipped without a justification: \(skip.comment)")
        }
        // The failing variant: the sidecar manifest as it was before (no securityContext, limits,
        // liveness of the app, namespace, NetworkPolicy).
        let dir = try DeployTools.temporaryDirectory("checkov-k8s")
        defer { try? FileManager.default.removeItem(at: dir) }
        try """
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: legacy-api}
            spec:
              replicas: 2
              selector: {matchLabels: {app: legacy-api}}
              template:
                metadata: {labels: {app: legacy-api}}
                spec:
                  containers:
                    - name: attest-gateway
                      image: registry.example.com/attest-gateway:0.1.0
                      readinessProbe: {httpGet: {path: /readyz, port: 9901}}
                      livenessProbe: {httpGet: {path: /healthz, port: 9901}}
                      resources: {requests: {cpu: 100m, memory: 32Mi}}
            """.write(to: dir.appendingPathComponent("old.yaml"), atomically: true, encoding: .utf8)
        let old = try Self.checkov(dir)
        for id in ["CKV_K8S_20", "CKV_K8S_22", "CKV_K8S_23", "CKV_K8S_28", "CKV_K8S_31", "CKV_K8S_11", "CKV_K8S_21"] {
            XCTAssertTrue(old.failed.contains { $0.hasPrefix(id + " ") }, "\(id) not reported: \(old.failed)")
        }
    }

    /// Each ConfigMap's gateway.yaml passes check-config, with the Redis password file the
    /// Deployment mounts from the Secret. Needs `store.password_file` (issue 9, "Secrets").
    func testConfigMapConfigurationsPassCheckConfig() throws {
        let objects = try Self.objects()
        let configMaps = objects.filter { Self.kind($0.object) == "ConfigMap" && ($0.object["data"] as? [String: String])?["gateway.yaml"] != nil }
        XCTAssertEqual(Set(configMaps.map(\.file)), ["gateway.yaml", "sidecar.yaml"])
        for (file, object) in configMaps {
            let yaml = (object["data"] as! [String: String])["gateway.yaml"]!
            XCTAssertTrue(yaml.contains("password_file: /run/secrets/redis/password"), file)
            let result = try ShippedConfigCheck.check(yaml: yaml, secretFiles: ["/run/secrets/redis/password"])
            XCTAssertEqual(result.status, 0, "\(file): \(result.output)")
        }
    }

    /// Every pod: non-root, seccomp RuntimeDefault, no service account token; every container:
    /// read-only root, no privilege escalation, all capabilities dropped, requests and limits. The
    /// gateway containers: startup, liveness (/healthz) and readiness (/readyz) probes on the admin
    /// port, a preStop, a grace period longer than preStop plus the drain, the ConfigMap and the
    /// Secret mounted where the configuration expects them; a PodDisruptionBudget selects them.
    func testPodsAreHardenedProbedAndOutlastTheDrain() throws {
        let objects = try Self.objects()
        let workloads = objects.filter { ["Deployment", "StatefulSet"].contains(Self.kind($0.object)) }
        XCTAssertEqual(Set(workloads.map { Self.name($0.object) }), ["redis", "demo-upstream", "attest-gateway", "legacy-api"])
        var gatewayContainers = 0
        for (file, workload) in workloads {
            let label = "\(file) \(Self.name(workload))"
            XCTAssertEqual((workload["metadata"] as? [String: Any])?["namespace"] as? String, "attest", label)
            let spec = try XCTUnwrap(workload["spec"] as? [String: Any])
            let template = try XCTUnwrap(spec["template"] as? [String: Any])
            let pod = try XCTUnwrap(template["spec"] as? [String: Any])
            let podLabels = (template["metadata"] as? [String: Any])?["labels"] as? [String: String] ?? [:]
            XCTAssertEqual(pod["automountServiceAccountToken"] as? Bool, false, label)
            let security = try XCTUnwrap(pod["securityContext"] as? [String: Any], label)
            XCTAssertEqual(security["runAsNonRoot"] as? Bool, true, label)
            XCTAssertGreaterThanOrEqual(security["runAsUser"] as? Int ?? 0, 10000, label)
            XCTAssertEqual((security["seccompProfile"] as? [String: Any])?["type"] as? String, "RuntimeDefault", label)
            let volumes = pod["volumes"] as? [[String: Any]] ?? []
            for container in try XCTUnwrap(pod["containers"] as? [[String: Any]]) {
                let name = "\(label)/\(container["name"] ?? "?")"
                let context = try XCTUnwrap(container["securityContext"] as? [String: Any], name)
                XCTAssertEqual(context["readOnlyRootFilesystem"] as? Bool, true, name)
                XCTAssertEqual(context["allowPrivilegeEscalation"] as? Bool, false, name)
                XCTAssertEqual((context["capabilities"] as? [String: Any])?["drop"] as? [String], ["ALL"], name)
                let resources = try XCTUnwrap(container["resources"] as? [String: [String: Any]], name)
                for kind in ["requests", "limits"] {
                    XCTAssertNotNil(resources[kind]?["cpu"], "\(name) \(kind).cpu")
                    XCTAssertNotNil(resources[kind]?["memory"], "\(name) \(kind).memory")
                }
                XCTAssertNotNil(container["livenessProbe"], name)
                XCTAssertNotNil(container["readinessProbe"], name)
                guard container["args"] as? [String] == ["--config", "/etc/attest-gateway/gateway.yaml"] else { continue }

                gatewayContainers += 1
                func probe(_ key: String) -> (path: String?, port: String?) {
                    let get = (container[key] as? [String: Any])?["httpGet"] as? [String: Any]
                    return (get?["path"] as? String, get?["port"] as? String)
                }
                XCTAssertTrue(probe("startupProbe") == ("/healthz", "admin"), name)
                XCTAssertTrue(probe("livenessProbe") == ("/healthz", "admin"), name)
                XCTAssertTrue(probe("readinessProbe") == ("/readyz", "admin"), name)
                let ports = container["ports"] as? [[String: Any]] ?? []
                XCTAssertTrue(ports.contains { $0["name"] as? String == "admin" && $0["containerPort"] as? Int == 9901 }, name)
                let preStop = try XCTUnwrap((((container["lifecycle"] as? [String: Any])?["preStop"] as? [String: Any])?["exec"] as? [String: Any])?["command"] as? [String], name)
                XCTAssertEqual(preStop.first, "/bin/sleep", name)
                let sleep = try XCTUnwrap(Int(preStop.last ?? ""), name)

                // The ConfigMap it mounts, and its drain.
                let mounts = container["volumeMounts"] as? [[String: Any]] ?? []
                let configVolume = try XCTUnwrap(mounts.first { $0["mountPath"] as? String == "/etc/attest-gateway" }?["name"] as? String, name)
                let configMapName = try XCTUnwrap((volumes.first { $0["name"] as? String == configVolume }?["configMap"] as? [String: Any])?["name"] as? String, name)
                let configMap = try XCTUnwrap(objects.first { Self.kind($0.object) == "ConfigMap" && Self.name($0.object) == configMapName }?.object, name)
                let yaml = try XCTUnwrap((configMap["data"] as? [String: String])?["gateway.yaml"], name)
                XCTAssertTrue(yaml.contains("admin: 0.0.0.0:9901"), "the probes reach the admin listener: \(name)")
                let drain = try XCTUnwrap(ShippedConfigCheck.drainSeconds(yaml), name)
                let grace = try XCTUnwrap(pod["terminationGracePeriodSeconds"] as? Int, name)
                // /healthz answers 503 while draining: the liveness probe must not give up first.
                let liveness = try XCTUnwrap(container["livenessProbe"] as? [String: Any], name)
                let livenessSeconds = (liveness["periodSeconds"] as? Int ?? 10) * (liveness["failureThreshold"] as? Int ?? 3)
                XCTAssertGreaterThan(livenessSeconds, drain, "\(name): liveness would restart a draining gateway")
                XCTAssertGreaterThan(grace, sleep + drain, "\(name): grace period \(grace) s vs preStop \(sleep) s + drain \(drain) s")
                // The Secret, where password_file points.
                let secretVolume = try XCTUnwrap(mounts.first { $0["mountPath"] as? String == "/run/secrets/redis" }?["name"] as? String, name)
                XCTAssertEqual((volumes.first { $0["name"] as? String == secretVolume }?["secret"] as? [String: Any])?["secretName"] as? String, "redis-auth", name)
                XCTAssertEqual(podLabels["attest-gateway/redis-client"], "true", "\(name): Redis' NetworkPolicy admits it")

                let budgets = objects.filter { Self.kind($0.object) == "PodDisruptionBudget" }.map(\.object)
                XCTAssertTrue(budgets.contains { budget in
                    let selector = ((budget["spec"] as? [String: Any])?["selector"] as? [String: Any])?["matchLabels"] as? [String: String] ?? [:]
                    return !selector.isEmpty && selector.allSatisfy { podLabels[$0.key] == $0.value }
                }, "\(name): no PodDisruptionBudget selects it")
            }
        }
        XCTAssertEqual(gatewayContainers, 2, "the standalone gateway and the sidecar")
        let secret = try XCTUnwrap(objects.first { Self.kind($0.object) == "Secret" && Self.name($0.object) == "redis-auth" }?.object)
        XCTAssertNotNil((secret["stringData"] as? [String: String])?["password"])
    }

    /// The Redis StatefulSet's command, run here with its mounts mapped to the ConfigMap's redis.conf
    /// and a secret file: the Secret is the password, noeviction and append-only hold; its readiness
    /// probe passes, and fails with Redis down.
    func testRedisTakesItsPasswordFromTheSecret() throws {
        let objects = try Self.objects()
        let redis = try XCTUnwrap(objects.first { Self.kind($0.object) == "StatefulSet" && Self.name($0.object) == "redis" }?.object)
        let pod = try XCTUnwrap(((redis["spec"] as? [String: Any])?["template"] as? [String: Any])?["spec"] as? [String: Any])
        let container = try XCTUnwrap((pod["containers"] as? [[String: Any]])?.first)
        let command = try XCTUnwrap(container["command"] as? [String])
        XCTAssertEqual(Array(command.prefix(2)), ["sh", "-c"])
        let configMap = try XCTUnwrap(objects.first { Self.kind($0.object) == "ConfigMap" && Self.name($0.object) == "redis-config" }?.object)
        let conf = try XCTUnwrap((configMap["data"] as? [String: String])?["redis.conf"])
        let dir = try DeployTools.temporaryDirectory("redis-conf")
        defer { try? FileManager.default.removeItem(at: dir) }
        let confFile = dir.appendingPathComponent("redis.conf")
        // `dir /data` is the volume's; the test's own folder comes from --dir.
        try conf.replacingOccurrences(of: "dir /data\n", with: "").write(to: confFile, atomically: true, encoding: .utf8)
        let server = try ManifestRedis(shellCommand: command[2], secretPath: "/run/secrets/redis/password",
                                       paths: [("/etc/redis/redis.conf", confFile.path)])
        try server.assertConfigured()
        let readiness = try XCTUnwrap(((container["readinessProbe"] as? [String: Any])?["exec"] as? [String: Any])?["command"] as? [String])
        XCTAssertEqual(Array(readiness.prefix(2)), ["sh", "-c"])
        let probe = readiness[2]
            .replacingOccurrences(of: "/run/secrets/redis/password", with: server.work.appendingPathComponent("secret").path)
            .replacingOccurrences(of: "redis-cli", with: "redis-cli -p \(server.port)")
        XCTAssertEqual(try DeployTools.run(try DeployTools.system("sh"), ["-c", probe]).status, 0, probe)
        server.process.stop()
        XCTAssertNotEqual(try DeployTools.run(try DeployTools.system("sh"), ["-c", probe]).status, 0, "fails with Redis down")
    }
}
