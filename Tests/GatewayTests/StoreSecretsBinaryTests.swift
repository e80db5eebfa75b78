import Foundation
import GatewayTestSupport
import XCTest

/// The built `attest-gateway` against a redis-server that requires a password given through the
/// environment (`${NAME}`) or a file (`store.password_file`): it logs in, and the password appears in
/// no output (check-config, lifecycle lines); a wrong password keeps the store unavailable, an unset
/// variable stops the start with the key path.
final class StoreSecretsBinaryTests: XCTestCase {
    private var redis: RedisServer!
    private var work: URL!
    /// Ports held unanswered for the test's gateways (upstream and dead upstream).
    private var reserved: [ReservedPort] = []
    private let password = "pw-\(UUID().uuidString)"

    override func setUpWithError() throws {
        redis = try RedisServer()
        XCTAssertEqual(try redis.cli("CONFIG", "SET", "requirepass", password), "OK")
        work = try E2EPaths.temporaryDirectory("secrets")
    }

    override func tearDown() {
        redis?.stop()
        reserved = []
        if let work { try? FileManager.default.removeItem(at: work) }
        super.tearDown()
    }

    /// Writes the standard configuration with `storeExtra` lines under `store:`; returns its path.
    private func configFile(_ storeExtra: String) throws -> String {
        let cas = try TestCAs.shared()
        // Ports nothing may answer on, held for the whole test (tearDown releases them).
        let dead = try ReservedPort()
        reserved.append(dead)
        let yaml = E2EEnvironment.yaml(store: "\(redis.url)\n  \(storeExtra)", upstreamPort: dead.port,
                                       deadPort: dead.port, roots: cas.trustedRoots)
        let file = work.appendingPathComponent("gateway.yaml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        return file.path
    }

    /// Starts the gateway; returns it with its admin port.
    private func start(_ config: String, environment: [String: String]) throws -> (ChildProcess, UInt16) {
        let process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config], environment: environment)
        return (process, try XCTUnwrap(StartedLine.wait(for: process)?.adminPort, process.output))
    }

    private func storeWord(_ admin: UInt16) -> String? {
        StoreOutageTests.readiness((try? Curl.get("http://127.0.0.1:\(admin)/readyz"))?.text ?? "")?.store
    }

    func testPasswordFromEnvironmentLogsInAndIsNeverPrinted() throws {
        let config = try configFile("password: \"${ATTEST_TEST_REDIS_PASSWORD}\"")
        let check = try ChildProcess.run(try E2EPaths.gatewayBinary(), ["check-config", config],
                                         environment: ["ATTEST_TEST_REDIS_PASSWORD": password])
        XCTAssertEqual(check.status, 0, check.output)
        XCTAssertFalse(check.output.contains(password), check.output)

        let (process, admin) = try start(config, environment: ["ATTEST_TEST_REDIS_PASSWORD": password])
        defer { process.stop(signal: SIGKILL, grace: 1) }
        XCTAssertTrue(eventually { storeWord(admin) == "ok" }, "logged in to Redis: \(process.output)")
        kill(process.pid, SIGTERM)
        XCTAssertEqual(process.wait(), 0)
        XCTAssertFalse(process.output.contains(password), process.output)
    }

    func testWrongPasswordKeepsTheStoreUnavailableWithoutPrintingIt() throws {
        let wrong = "wrong-\(UUID().uuidString)"
        let (process, admin) = try start(try configFile("password: \"${ATTEST_TEST_REDIS_PASSWORD}\""),
                                         environment: ["ATTEST_TEST_REDIS_PASSWORD": wrong])
        defer { process.stop(signal: SIGKILL, grace: 1) }
        XCTAssertTrue(eventually { GatewayBinaryTests.jsonLines(process.output).contains { $0["type"] as? String == "store_unavailable" } },
                      process.output)
        XCTAssertEqual(storeWord(admin), "unavailable")
        XCTAssertFalse(process.output.contains(wrong), process.output)
    }

    func testPasswordFileLogsIn() throws {
        let file = work.appendingPathComponent("redis.pw")
        try (password + "\n").write(to: file, atomically: true, encoding: .utf8)
        let (process, admin) = try start(try configFile("password_file: redis.pw"), environment: [:])
        defer { process.stop(signal: SIGKILL, grace: 1) }
        XCTAssertTrue(eventually { storeWord(admin) == "ok" }, process.output)
        XCTAssertFalse(process.output.contains(password), process.output)
    }

    func testUnsetVariableStopsTheStartWithItsPath() throws {
        let process = try ChildProcess(try E2EPaths.gatewayBinary(),
                                       ["--config", try configFile("password: \"${ATTEST_TEST_UNSET_VARIABLE}\"")])
        XCTAssertEqual(process.wait(), 1)
        // One start_failed JSON line naming the key path and the variable.
        XCTAssertTrue(process.output.contains(#""type":"start_failed""#), process.output)
        XCTAssertTrue(process.output.contains(#""path":"store.password","message":"the environment variable ATTEST_TEST_UNSET_VARIABLE is not set"#),
                      process.output)
    }
}
