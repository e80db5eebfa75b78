import Foundation
@testable import Gateway
import GatewayTestSupport
import XCTest

/// The built `attest-gateway` runs on the mimalloc it links (README, "Heap allocator"), and says so in
/// its `started` line and in `attest_gateway_build_info{allocator}`; `HeapAllocator` reports what serves
/// `malloc`, not merely what is loaded.
final class HeapAllocatorTests: XCTestCase {
    /// mimalloc's version as Debian packages it (`2.0.9+ds-2` -> `2.0.9`): the expected label comes
    /// from dpkg, not from the gateway.
    static func packagedMimallocVersion() throws -> String {
        let query = try ChildProcess.run("dpkg-query", ["-W", "-f=${Version}", "libmimalloc2.0"])
        XCTAssertEqual(query.status, 0, "libmimalloc2.0 is installed (scripts/setup): \(query.output)")
        let upstream = query.output.split(separator: "+").first.map(String.init) ?? query.output
        return upstream.split(separator: "-").first.map(String.init) ?? upstream
    }

    /// Starts the built gateway (memory store, nothing upstream) with `environment`; returns its
    /// `started` line's `allocator` and the `allocator` label of `attest_gateway_build_info`.
    func startedAllocator(environment: [String: String] = [:]) throws -> (started: String?, metric: String?) {
        let work = try E2EPaths.temporaryDirectory("allocator")
        defer { try? FileManager.default.removeItem(at: work) }
        let dead = try ReservedPort()
        defer { withExtendedLifetime(dead) {} }
        let config = work.appendingPathComponent("gateway.yaml")
        try E2EEnvironment.yaml(store: "memory", upstreamPort: dead.port, deadPort: dead.port,
                                roots: try TestCAs.shared().trustedRoots)
            .write(to: config, atomically: true, encoding: .utf8)
        let process = try ChildProcess(try E2EPaths.gatewayBinary(), ["--config", config.path], environment: environment)
        defer { process.stop() }
        guard let started = StartedLine.wait(for: process), let admin = started.adminPort else {
            throw ChildProcessError.notReady("attest-gateway did not start: \(process.output)")
        }
        let scrape = ObservabilityBinaryTests.Scrape(try Curl.get("http://127.0.0.1:\(admin)/metrics").text)
        let info = scrape.samples.first { $0.name == "attest_gateway_build_info" }
        return (started.fields["allocator"] as? String, info?.labels["allocator"])
    }

    func testTheGatewayBinaryRunsOnTheMimallocItLinks() throws {
        let expected = "mimalloc " + (try Self.packagedMimallocVersion())
        let seen = try startedAllocator()
        XCTAssertEqual(seen.started, expected, "the started line names the allocator serving malloc")
        XCTAssertEqual(seen.metric, expected, "attest_gateway_build_info{allocator}")
    }

    /// The failing side: with another allocator preloaded ahead of it, mimalloc is still loaded (the
    /// binary links it) but no longer answers `malloc`, and the gateway says so.
    func testAnAllocatorPreloadedAheadOfMimallocIsReportedAsTheOneServing() throws {
        let files = try ChildProcess.run("dpkg-query", ["-L", "libjemalloc2"])
        let jemalloc = try XCTUnwrap(files.output.split(separator: "\n").map(String.init).first { $0.hasSuffix("/libjemalloc.so.2") },
                                     "libjemalloc2 is installed (scripts/setup --tests): \(files.output)")
        let seen = try startedAllocator(environment: ["LD_PRELOAD": jemalloc])
        XCTAssertEqual(seen.started, "jemalloc")
        XCTAssertEqual(seen.metric, "jemalloc")
    }

    /// The library modules do not link mimalloc: this test process allocates with what it was linked
    /// with, and the probe agrees with the process's own memory map.
    func testTheProbeInThisProcessAgreesWithItsMemoryMap() throws {
        let maps = try String(contentsOfFile: "/proc/self/maps", encoding: .utf8)
        let preload = ProcessInfo.processInfo.environment["LD_PRELOAD"] ?? ""
        let expectMimalloc = maps.contains("libmimalloc") && preload.isEmpty
        XCTAssertEqual(HeapAllocator.probe().hasPrefix("mimalloc "), expectMimalloc, "\(HeapAllocator.probe())")
        XCTAssertEqual(HeapAllocator.current, HeapAllocator.probe())
    }

    func testMimallocVersionNumbersReadAsMajorMinorPatch() {
        XCTAssertEqual(HeapAllocator.versionText(209), "2.0.9")
        XCTAssertEqual(HeapAllocator.versionText(212), "2.1.2")
        XCTAssertEqual(HeapAllocator.versionText(300), "3.0.0")
        XCTAssertNotEqual(HeapAllocator.versionText(209), "20.9")
    }
}
