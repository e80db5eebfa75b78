import Foundation
import GatewayTestSupport
import XCTest

/// The built `attest-gateway` executable as a child process: its access log on standard output,
/// `check-config`, and draining on SIGTERM.
final class GatewayBinaryTests: XCTestCase {
    /// A running `attest-gateway --config FILE` with the standard configuration (memory store), its
    /// upstream and the ports it announced.
    final class RunningGateway: GatewayClient {
        let process: ChildProcess
        let upstream: UpstreamProcess
        let work: URL
        let cas: TestCAs
        let port: UInt16
        let adminPort: UInt16
        /// The `down` upstream's port (nothing answers on it).
        let dead: ReservedPort

        init(access: Bool) throws {
            cas = try TestCAs.shared()
            work = try E2EPaths.temporaryDirectory("binary")
            upstream = try UpstreamProcess()
            dead = try ReservedPort()
            let yaml = E2EEnvironment.yaml(store: "memory", upstreamPort: upstream.port, deadPort: dead.port,
                                           roots: cas.trustedRoots, access: access)
            // A drain limit far above the 3 s in-flight request of the SIGTERM test (it exits as soon
            // as the request is done), so a loaded machine never turns the drain into a cut.
            let drained = yaml.replacingOccurrences(of: "  drain: 5s\n", with: "  drain: 60s\n")
            let config = work.appendingPathComponent("gateway.yaml")
            try drained.write(to: config, atomically: true, encoding: .utf8)
            process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path])
            guard let started = StartedLine.wait(for: process), let port = started.port,
                  let adminPort = started.adminPort else {
                throw ChildProcessError.notReady("attest-gateway did not start: \(process.output)")
            }
            // The process announcing these ports is the one started here.
            guard started.pid == String(process.pid) else {
                throw SetupFailure("the started line names pid \(started.pid ?? "?"), not the child \(process.pid)")
            }
            self.port = port
            self.adminPort = adminPort
        }

        /// SIGTERM, then the exit status.
        func terminate() -> Int32 {
            kill(process.pid, SIGTERM)
            return process.wait()
        }

        deinit {
            process.stop(signal: SIGKILL, grace: 1)
            upstream.stop()
            try? FileManager.default.removeItem(at: work)
        }
    }

    /// The JSON objects among `text`'s lines.
    static func jsonLines(_ text: String) -> [[String: Any]] { StartedLine.jsonLines(text) }

    /// Behind a trusted proxy (the standard configuration trusts 127.0.0.2) the access line's `client`
    /// is the client the proxy named, the address the rate limit keys on, and the proxy is `peer`; a
    /// direct client's `X-Forwarded-For` changes nothing.
    func testAccessLogNamesTheForwardedClientBehindATrustedProxy() throws {
        let gateway = try RunningGateway(access: true)
        let proxied = try Curl.request(port: gateway.port, method: "GET", target: "/v1/open/proxied",
                                       headers: [("X-Forwarded-For", "198.51.100.9, 127.0.0.2")], source: "127.0.0.2")
        XCTAssertEqual(proxied.status, 200, "\(proxied)")
        let direct = try Curl.request(port: gateway.port, method: "GET", target: "/v1/open/direct",
                                      headers: [("X-Forwarded-For", "198.51.100.9")])
        XCTAssertEqual(direct.status, 200, "\(direct)")
        XCTAssertEqual(gateway.terminate(), 0)
        let lines = GatewayBinaryTests.jsonLines(gateway.process.output).filter { $0["type"] as? String == "access" }
        let viaProxy = lines.first { $0["path"] as? String == "/v1/open/proxied" }
        XCTAssertEqual(viaProxy?["client"] as? String, "198.51.100.9", "\(lines)")
        XCTAssertTrue((viaProxy?["peer"] as? String)?.hasPrefix("127.0.0.2:") ?? false, "\(lines)")
        let fromClient = lines.first { $0["path"] as? String == "/v1/open/direct" }
        XCTAssertTrue((fromClient?["client"] as? String)?.hasPrefix("127.0.0.1:") ?? false, "\(lines)")
        XCTAssertNil(fromClient?["peer"], "\(lines)")
    }

    func testAccessLogHasOneJSONLinePerRequestWithoutSecrets() throws {
        let gateway = try RunningGateway(access: true)
        let kind: DeviceKind = E2EPaths.hasRefDevice ? .ref : .sim
        let device = try gateway.attestedDevice(kind)                                    // 2 requests
        let body = Array("BODY-MARKER-\(UUID().uuidString)".utf8)
        let target = "/v1/protected/log?secret=QUERY-MARKER"
        let signed = try gateway.signedRequest(device, target: target, body: body, counter: 1)  // 1 request
        XCTAssertEqual(try gateway.send(signed).status, 200)                            // 1
        XCTAssertEqual(try gateway.send(signed).status, 401)                            // 1
        XCTAssertEqual(try gateway.send("GET", "/v1/open/x").status, 200)               // 1
        XCTAssertEqual(try gateway.send("POST", "/v1/monitored/y", body: body).status, 200)  // 1
        XCTAssertEqual(try gateway.send("GET", "/nowhere").status, 404)                 // 1
        XCTAssertEqual(try gateway.send("GET", "/v1/open/h2", via: .h2c).status, 200)  // 1 (h2c)
        XCTAssertEqual(gateway.terminate(), 0, "exit 0 after draining")

        let output = gateway.process.output
        let lines = GatewayBinaryTests.jsonLines(output).filter { $0["type"] as? String == "access" }
        XCTAssertEqual(lines.count, 9, "one access line per request:\n\(output)")
        for line in lines {
            XCTAssertEqual(line["proto"] as? String, line["path"] as? String == "/v1/open/h2" ? "h2" : "h1", "\(line)")
            XCTAssertNil(line["tls"], "no TLS on this listener: \(line)")
            for key in ["route", "verdict", "reason", "status", "latency_ms", "method", "path"] {
                XCTAssertTrue(line.keys.contains(key), "\(key) in \(line)")
            }
            XCTAssertNotNil(line["latency_ms"] as? NSNumber, "\(line)")
            XCTAssertNotNil(line["status"] as? NSNumber, "\(line)")
        }
        func line(route: String, status: Int) -> [String: Any]? {
            lines.first { $0["route"] as? String == route && ($0["status"] as? NSNumber)?.intValue == status }
        }
        let valid = line(route: "protected", status: 200)
        XCTAssertEqual(valid?["verdict"] as? String, "valid")
        XCTAssertEqual(valid?["path"] as? String, "/v1/protected/log", "the path, never the query")
        let replay = line(route: "protected", status: 401)
        XCTAssertEqual(replay?["verdict"] as? String, "invalid")
        XCTAssertEqual(replay?["reason"] as? String, "challenge_unknown")
        XCTAssertEqual(line(route: "monitored", status: 200)?["verdict"] as? String, "missing")
        XCTAssertEqual(line(route: "monitored", status: 200)?["reason"] as? String, "assertion_missing")
        XCTAssertNotNil(line(route: "open", status: 200))
        XCTAssertNotNil(lines.first { ($0["status"] as? NSNumber)?.intValue == 404 }, "the 404 is logged too")
        XCTAssertNotNil(line(route: "endpoint:attest", status: 201))

        let secrets = [signed.challenge, base64URL(signed.challenge), String(signed.assertion.prefix(40)),
                       String(base64URL(signed.assertion).prefix(40)), "BODY-MARKER", "QUERY-MARKER"]
        for secret in secrets {
            XCTAssertFalse(output.contains(secret), "the log must not contain \(secret)")
        }
    }

    func testSIGTERMDrainsAnInFlightRequestThenExitsZero() throws {
        let gateway = try RunningGateway(access: false)
        let before = try gateway.upstream.requestCount()
        let bodyFile = gateway.work.appendingPathComponent("slow-body").path
        let client = try ChildProcess("curl", ["-s", "--max-time", "20", "-o", bodyFile, "-w", "%{http_code}",
                                               "http://127.0.0.1:\(gateway.port)/v1/open/slow?delay=3000"])
        XCTAssertTrue(eventually { (try? gateway.upstream.requestCount()) ?? before > before },
                      "the slow request reached the upstream")
        XCTAssertTrue(client.isRunning, "still in flight when SIGTERM is sent")
        kill(gateway.process.pid, SIGTERM)
        XCTAssertEqual(client.wait(), 0)
        XCTAssertEqual(client.output, "200", "the in-flight request completed")
        let echo = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: bodyFile))) as? [String: Any]
        XCTAssertEqual(echo?["target"] as? String, "/v1/open/slow?delay=3000")
        XCTAssertEqual(gateway.process.wait(), 0, "exit 0 after draining")
        let events = GatewayBinaryTests.jsonLines(gateway.process.output).compactMap { $0["type"] as? String }
        XCTAssertTrue(events.contains("draining"), gateway.process.output)
        XCTAssertEqual(events.last, "stopped", gateway.process.output)
    }

    /// Lifecycle lines are JSON whatever their values hold: a listener path with a tab, a quote and a
    /// non-ASCII letter reaches the `started` line escaped (RFC 8259), not raw.
    func testLifecycleLinesStayJSONWithControlCharactersInValues() throws {
        let cas = try TestCAs.shared()
        let work = try E2EPaths.temporaryDirectory("events")
        defer { try? FileManager.default.removeItem(at: work) }
        let socket = work.appendingPathComponent("gw\t\"é.sock").path
        let yamlSocket = socket.replacingOccurrences(of: "\t", with: "\\t").replacingOccurrences(of: "\"", with: "\\\"")
        let dead = try ReservedPort()
        defer { withExtendedLifetime(dead) {} }
        let yaml = E2EEnvironment.yaml(store: "memory", upstreamPort: dead.port, deadPort: dead.port,
                                       roots: cas.trustedRoots, listen: "[127.0.0.1:0, \"unix:\(yamlSocket)\"]")
        let config = work.appendingPathComponent("gateway.yaml")
        try yaml.write(to: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path])
        defer { process.stop(signal: SIGKILL, grace: 1) }
        var started: [String: Any]?
        eventually {
            started = GatewayBinaryTests.jsonLines(process.output).first { $0["type"] as? String == "started" }
            return started != nil || !process.isRunning
        }
        XCTAssertEqual((started?["listen"] as? String)?.hasSuffix(",unix:\(socket)"), true, process.output)
        // Counts are JSON numbers, as in the other lifecycle lines.
        XCTAssertEqual(started?["pid"] as? Int, Int(process.pid), process.output)
        XCTAssertNotNil(started?["routes"] as? Int, process.output)
        XCTAssertNil(started?["routes"] as? String, process.output)
        kill(process.pid, SIGTERM)
        XCTAssertEqual(process.wait(), 0)
        for line in process.output.split(separator: "\n") where line.hasPrefix("{") {
            XCTAssertNotNil(try? JSONSerialization.jsonObject(with: Data(line.utf8)), "not JSON: \(line)")
        }
    }

    func testCheckConfigOnABrokenFileExits1AndNamesThePath() throws {
        let dir = try E2EPaths.temporaryDirectory("check")
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.appendingPathComponent("broken.yaml")
        try """
        listen: 127.0.0.1:8080
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          legacy: http://127.0.0.1:8081
        routes:
          - path_prefix: /v1
            upstream: legacy
            max_body: 10MB
          - path_prefix: /v2
            upstream: nowhere

        """.write(to: file, atomically: true, encoding: .utf8)
        let result = try ChildProcess.run(try E2EPaths.gatewayBinary(), ["check-config", file.path])
        XCTAssertEqual(result.status, 1, result.output)
        XCTAssertTrue(result.output.contains("routes[0].max_body"), result.output)
        XCTAssertTrue(result.output.contains("routes[1].upstream"), result.output)
        XCTAssertTrue(result.output.contains("line 9"), "errors carry their line: \(result.output)")
    }

    func testCheckConfigOnTheShippedFileExits0() throws {
        let file = SharedFixtures.packageRoot.appendingPathComponent("Config/gateway.yaml").path
        let result = try ChildProcess.run(try E2EPaths.gatewayBinary(), ["check-config", file])
        XCTAssertEqual(result.status, 0, result.output)
    }

    /// check-config reads the TLS files a configuration names: a key that does not belong to the
    /// leaf, or a CA bundle that is not PEM, fails at its YAML path; good files pass.
    func testCheckConfigReadsCertificateFilesAtTheirPaths() throws {
        let pki = TestPKI.shared
        let dir = try E2EPaths.temporaryDirectory("check-tls")
        defer { try? FileManager.default.removeItem(at: dir) }
        func check(key: String, ca: String) throws -> (status: Int32, output: String) {
            let file = dir.appendingPathComponent("tls.yaml")
            try """
            listen:
              - address: 127.0.0.1:8443
                tls:
                  certificates:
                    - chain: \(pki.address.chainPath)
                      key: \(key)
            apps:
              - app_id: ABCDE12345.com.example.app
            upstreams:
              api:
                url: https://127.0.0.1:9443
                tls:
                  ca: \(ca)
            routes:
              - path_prefix: /
                upstream: api

            """.write(to: file, atomically: true, encoding: .utf8)
            return try ChildProcess.run(try E2EPaths.gatewayBinary(), ["check-config", file.path])
        }
        let good = try check(key: pki.address.keyPath, ca: pki.root.certificate)
        XCTAssertEqual(good.status, 0, good.output)
        let notPEM = dir.appendingPathComponent("ca.txt").path
        try "not a certificate\n".write(toFile: notPEM, atomically: true, encoding: .utf8)
        let bad = try check(key: pki.a.keyPath, ca: notPEM)
        XCTAssertEqual(bad.status, 1, bad.output)
        XCTAssertTrue(bad.output.contains("listen[0].tls.certificates[0]"), bad.output)
        XCTAssertTrue(bad.output.lowercased().contains("match"), "the key does not match the leaf: \(bad.output)")
        XCTAssertTrue(bad.output.contains("upstreams.api.tls.ca"), bad.output)
    }

    /// check-config loads root files and DeviceCheck keys as start and reload do: a certificate block
    /// that does not parse (`trust.extra_roots`, `trust.extra_receipt_roots`) and a `.p8` key on
    /// P-384 fail at their YAML paths, and the gateway refuses to start on the same file with the
    /// same path. (Before, check-config only looked for the BEGIN line and said OK, then start failed.)
    func testCheckConfigLoadsRootFilesAndDeviceCheckKeysAsStartDoes() throws {
        let cas = try TestCAs.shared()
        let dir = try E2EPaths.temporaryDirectory("check-trust")
        defer { try? FileManager.default.removeItem(at: dir) }
        let fake = dir.appendingPathComponent("fake-root.pem").path
        try "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".write(toFile: fake, atomically: true, encoding: .utf8)
        func key(_ curve: String) throws -> String {
            let path = dir.appendingPathComponent("\(curve).p8").path
            let made = try ChildProcess.run("openssl", ["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:\(curve)", "-out", path])
            XCTAssertEqual(made.status, 0, made.output)
            return path
        }
        let p256 = try key("P-256"), p384 = try key("P-384")
        func run(_ command: [String], roots: String, receiptRoots: String, deviceCheckKey: String) throws -> (status: Int32, output: String) {
            let file = dir.appendingPathComponent("trust.yaml")
            try """
            listen: 127.0.0.1:0
            admin: 127.0.0.1:0
            apps:
              - app_id: ABCDE12345.com.example.app
                environment: development
                risk:
                  team_id: ABCDE12345
                  key_id: KEY1234567
                  private_key_file: \(deviceCheckKey)
                  data_server: https://127.0.0.1:9443
                  data_server_ca: \(cas.trustedRoots[0])
            trust:
              extra_roots: [\(roots)]
              extra_receipt_roots: [\(receiptRoots)]
            upstreams:
              app: http://127.0.0.1:8081
            routes:
              - path_prefix: /
                upstream: app

            """.write(to: file, atomically: true, encoding: .utf8)
            return try ChildProcess.run(try E2EPaths.gatewayBinary(), command + [file.path])
        }
        let root = cas.trustedRoots[0]
        let good = try run(["check-config"], roots: root, receiptRoots: root, deviceCheckKey: p256)
        XCTAssertEqual(good.status, 0, good.output)
        for (roots, receiptRoots, deviceCheckKey, path) in [(fake, root, p256, "trust.extra_roots[0]"),
                                                             (root, fake, p256, "trust.extra_receipt_roots[0]"),
                                                             (root, root, p384, "apps[0].risk.private_key_file")] {
            let checked = try run(["check-config"], roots: roots, receiptRoots: receiptRoots, deviceCheckKey: deviceCheckKey)
            XCTAssertEqual(checked.status, 1, "\(path): \(checked.output)")
            XCTAssertTrue(checked.output.contains(path), "\(path): \(checked.output)")
            let started = try run(["--config"], roots: roots, receiptRoots: receiptRoots, deviceCheckKey: deviceCheckKey)
            XCTAssertNotEqual(started.status, 0, "\(path): \(started.output)")
            XCTAssertTrue(started.output.contains("start_failed") && started.output.contains(path), "\(path): \(started.output)")
        }
    }
}
