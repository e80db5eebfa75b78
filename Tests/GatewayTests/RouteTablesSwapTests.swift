@testable import Gateway
import GatewayConfig
import GatewayTestSupport
import XCTest

/// `GatewayRuntime.reload` in process: the generation in force moves, unchanged upstreams keep their
/// pool, and a retired pool lives exactly as long as some tables (a request in flight) still hold it.
final class RouteTablesSwapTests: XCTestCase {
    private var work: URL!

    override func setUpWithError() throws {
        work = try E2EPaths.temporaryDirectory("swap")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: work)
    }

    private func yaml(kept: UInt16, changed: UInt16) -> String {
        """
        listen: 127.0.0.1:0
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          kept: http://127.0.0.1:\(kept)
          changed: http://127.0.0.1:\(changed)
        routes:
          - path_prefix: /kept
            upstream: kept
            mode: off
          - path_prefix: /changed
            upstream: changed
            mode: off
        log:
          access: false
        """
    }

    func testAReloadKeepsUnchangedPoolsAndRetiresChangedOnesWhenTheLastHolderGoes() throws {
        let file = work.appendingPathComponent("gateway.yaml")
        try yaml(kept: 9001, changed: 9002).write(to: file, atomically: true, encoding: .utf8)
        let runtime = try GatewayRuntime(loaded: GatewayConfiguration.load(path: file.path), loopCount: 2)
        defer { runtime.shutdown {} }
        // The tables at start, as a request in flight would hold them.
        var held: GatewayTables? = runtime.tables.latestTables
        XCTAssertEqual(held?.generation, 1)
        let kept = try XCTUnwrap(held?.pools["kept"])
        weak let retired = held?.pools["changed"]
        XCTAssertNotNil(retired)

        try yaml(kept: 9001, changed: 9003).write(to: file, atomically: true, encoding: .utf8)
        let report = runtime.reload()
        XCTAssertTrue(report.succeeded, "\(report.errors)")
        let second = runtime.tables.latestTables
        XCTAssertEqual(second.generation, 2)
        XCTAssertTrue(second.pools["kept"] === kept, "an unchanged upstream keeps its pool (warm connections)")
        XCTAssertFalse(second.pools["changed"] === retired, "a changed upstream gets a new pool")

        // The old tables keep the retired pool alive...
        waitFor("every loop picked up the new tables") {
            (0..<2).allSatisfy { index in
                let done = DispatchSemaphore(value: 0)
                nonisolated(unsafe) var generation: UInt64 = 0
                runtime.group.loops[index].execute {
                    generation = runtime.tables.current(loopIndex: index).generation
                    done.signal()
                }
                done.wait()
                return generation == 2
            }
        }
        XCTAssertNotNil(retired, "held by the old tables")
        XCTAssertNotNil(held)
        // ...and it goes (and shuts down) with the last holder.
        held = nil
        XCTAssertNil(retired, "released with the last tables that held it")
    }

    func testAFailedReloadChangesNothing() throws {
        let file = work.appendingPathComponent("gateway.yaml")
        try yaml(kept: 9001, changed: 9002).write(to: file, atomically: true, encoding: .utf8)
        let runtime = try GatewayRuntime(loaded: GatewayConfiguration.load(path: file.path), loopCount: 1)
        defer { runtime.shutdown {} }
        let before = runtime.tables.latestTables
        try yaml(kept: 9001, changed: 9002).replacingOccurrences(of: "upstream: changed", with: "upstream: missing")
            .write(to: file, atomically: true, encoding: .utf8)
        let report = runtime.reload()
        XCTAssertFalse(report.succeeded)
        XCTAssertEqual(report.errors.map(\.path), ["routes[1].upstream"])
        XCTAssertTrue(runtime.tables.latestTables === before, "the running tables stay")
        XCTAssertEqual(runtime.reloads.failureCount, 1)
        XCTAssertEqual(runtime.reloads.successCount, 0)
    }
}
