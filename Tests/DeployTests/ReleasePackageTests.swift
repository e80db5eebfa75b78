import Foundation
import GatewayTestSupport
import XCTest

/// The release tarball of `scripts/package` (DESIGN.md section 10: "the release binary is
/// self-contained"): what it holds, that its binaries load no Swift library and nothing from the
/// toolchain, that the Debian packages it needs are the ones the README and the Dockerfile name, and
/// that it runs, serving a whole simulated device session, in a root holding only those libraries.
final class ReleasePackageTests: XCTestCase {
    func testTarballHoldsBinariesExampleConfigsUnitAndNotes() throws {
        let release = try PackagedRelease.shared()
        let fm = FileManager.default
        for binary in [release.gateway, release.attestctl] {
            XCTAssertTrue(fm.isExecutableFile(atPath: binary), "\(binary) is not executable")
        }
        for file in ["gateway.yaml", "sidecar.yaml", "tls.yaml", "REFERENCE.md"] {
            let packaged = try Data(contentsOf: release.directory.appendingPathComponent("config/\(file)"))
            XCTAssertEqual(packaged, try Data(contentsOf: DeployTools.root.appendingPathComponent("Config/\(file)")),
                           "config/\(file) differs from Config/\(file)")
        }
        XCTAssertEqual(try Data(contentsOf: release.directory.appendingPathComponent("systemd/attest-gateway.service")),
                       try Data(contentsOf: DeployTools.root.appendingPathComponent("deploy/systemd/attest-gateway.service")))
        let readme = try String(contentsOf: release.directory.appendingPathComponent("README"), encoding: .utf8)
        let packages = try release.runtimePackages()
        XCTAssertFalse(packages.isEmpty)
        for package in packages { XCTAssertTrue(readme.contains(package), "the tarball's README does not name \(package)") }
        XCTAssertTrue(readme.contains("Licences"), readme)
        // The packaged gateway checks the standalone example (no file references) and says OK.
        let check = try DeployTools.run(release.gateway, ["check-config", release.directory.appendingPathComponent("config/gateway.yaml").path])
        XCTAssertEqual(check.status, 0, check.output)
        let version = try DeployTools.run(release.gateway, ["--version"])
        // `attest-gateway VERSION (REVISION)`: the tarball is named after VERSION, as scripts/package reads it.
        let words = version.output.split(separator: " ")
        XCTAssertGreaterThanOrEqual(words.count, 2, version.output)
        XCTAssertTrue(release.directory.lastPathComponent.hasPrefix("attest-gateway-" + String(words.count > 1 ? words[1] : "") + "-linux-"),
                      "\(release.directory.lastPathComponent) vs \(version.output)")
    }

    func testBinariesLoadNoSwiftLibraryAndOnlyTheNamedDebianPackages() throws {
        let release = try PackagedRelease.shared()
        let toolchain = try DeployTools.toolchainRoot()
        var owners = Set<String>()
        for binary in [release.gateway, release.attestctl] {
            let linked = try LinkedLibraries.of(binary)
            XCTAssertEqual(linked.violations(toolchainRoot: toolchain), [], binary)
            XCTAssertTrue(linked.libraries.contains { $0.name.hasPrefix("libssl.so") }, "\(linked)")
            owners.formUnion(try linked.debianPackages())
        }
        XCTAssertEqual(owners, try release.runtimePackages(), "RUNTIME-PACKAGES is what ldd and dpkg -S say")
        // The README's runtime list and the Docker image's runtime stage name every one of them.
        let readme = try String(contentsOf: DeployTools.root.appendingPathComponent("README.md"), encoding: .utf8)
        for package in owners { XCTAssertTrue(readme.contains("`\(package)`"), "README.md does not name `\(package)`") }
        let installed = try DockerfileTests.runtimeStagePackages()
        XCTAssertEqual(installed.subtracting(["ca-certificates"]), owners, "the Dockerfile's runtime stage installs exactly the runtime packages")
    }

    /// The failing variant: the debug build links the toolchain's runtime, and the same check says so.
    func testCheckFlagsTheDebugBuildsToolchainLibraries() throws {
        let debug = try BuiltProducts.executable("attest-gateway")
        let violations = try LinkedLibraries.of(debug).violations(toolchainRoot: try DeployTools.toolchainRoot())
        XCTAssertTrue(violations.contains { $0.hasPrefix("libswiftCore.so") }, "\(violations)")
        XCTAssertTrue(violations.contains { $0.hasPrefix("libFoundation") }, "\(violations)")
        // And the parser reads a missing library as one.
        let missing = LinkedLibraries(lddOutput: "\tlibswiftCore.so => not found\n\tlinux-vdso.so.1 (0x00007ffd)\n")
        XCTAssertEqual(missing.libraries, [.init(name: "libswiftCore.so", path: nil)])
        XCTAssertEqual(missing.violations(toolchainRoot: "/opt/swift/usr"), ["libswiftCore.so is not found"])
    }

    /// scripts/package's own check, fed the debug build (`--bin`): it refuses to package a binary
    /// linked to the toolchain's Swift runtime, and writes no tarball.
    func testPackageScriptRefusesTheDebugBuild() throws {
        let debug = URL(fileURLWithPath: try BuiltProducts.executable("attest-gateway")).deletingLastPathComponent()
        XCTAssertTrue(FileManager.default.isExecutableFile(atPath: debug.appendingPathComponent("attestctl").path))
        let out = try DeployTools.temporaryDirectory("package-out")
        defer { try? FileManager.default.removeItem(at: out) }
        let result = try DeployTools.run(DeployTools.root.appendingPathComponent("scripts/package").path,
                                         ["--bin", debug.path, "--out", out.path])
        XCTAssertNotEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("links libswiftCore.so"), result.output)
        XCTAssertTrue(result.output.contains("from the Swift toolchain"), result.output)
        XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: out.path), [], "no tarball")
    }

    /// The packaged binaries in a root with nothing but themselves and the Debian libraries `ldd`
    /// lists (no toolchain, no other file): check-config, then the quickstart's session: a demo
    /// upstream, the gateway (memory store, a test CA), a simulated device that attests, sends
    /// protected requests and a replay; the admin health check; mimalloc serves the binary's `malloc`
    /// (README, "Heap allocator"); every file the running gateway maps
    /// lies inside the root; SIGTERM drains and exits 0.
    func testRunsASimulatedSessionInACleanRootWithoutTheToolchain() throws {
        let release = try PackagedRelease.shared()
        let root = try CleanRoot(binaries: [release.gateway, release.attestctl])
        defer { root.remove() }
        XCTAssertFalse(root.libraries.contains { LinkedLibraries.isSwiftRuntime($0) }, "\(root.libraries)")

        let ca = try root.run(["/bin/attestctl", "ca", "--out", "/tmp/ca"])
        XCTAssertEqual(ca.status, 0, ca.output)
        let upstream = try root.start(["/bin/attestctl", "demo-upstream", "--listen", "127.0.0.1:0"])
        defer { upstream.stop() }
        var upstreamPort: UInt16?
        waitFor("the demo upstream in the clean root listens", timeout: 20) {
            upstreamPort = upstream.output.components(separatedBy: "listening on ").dropFirst().first.flatMap { DeployTools.port(in: $0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            return upstreamPort != nil || !upstream.isRunning
        }
        let upstreamAt = try XCTUnwrap(upstreamPort, upstream.output)

        let config = try root.write("""
            listen: 127.0.0.1:0
            admin: 127.0.0.1:0
            store: memory
            apps:
              - app_id: ABCDE12345.com.example.demo
                environment: development
            trust:
              extra_roots: [/tmp/ca/root.pem]
            upstreams:
              demo: http://127.0.0.1:\(upstreamAt)
            routes:
              - path_prefix: /demo/protected
                upstream: demo
              - path_prefix: /
                upstream: demo
                mode: off
            timeouts:
              drain: 5s
            """, to: "etc/attest-gateway/gateway.yaml")
        let check = try root.run(["/bin/attest-gateway", "check-config", config])
        XCTAssertEqual(check.status, 0, check.output)
        XCTAssertTrue(check.output.contains(": OK"), check.output)

        let gateway = try root.start(["/bin/attest-gateway", "--config", config])
        defer { gateway.stop(signal: SIGKILL) }
        var started: [String: Any]?
        waitFor("the gateway in the clean root starts", timeout: 20) {
            started = DeployTools.jsonLines(gateway.output).first { $0["type"] as? String == "started" }
            return started != nil || !gateway.isRunning
        }
        let line = try XCTUnwrap(started, gateway.output)
        let port = try XCTUnwrap((line["listen"] as? String).flatMap(DeployTools.port(in:)), "\(line)")
        let adminPort = try XCTUnwrap((line["admin"] as? String).flatMap(DeployTools.port(in:)), "\(line)")
        XCTAssertEqual(line["pid"] as? Int, Int(gateway.pid), "unshare, sh and chroot exec the gateway")
        XCTAssertTrue((line["allocator"] as? String)?.hasPrefix("mimalloc ") == true,
                      "the static-stdlib release binary's malloc, the Swift runtime's included, is mimalloc's: \(line)")

        // Every file the gateway has mapped is inside the root: no Swift library, nothing of the toolchain.
        // (cat: Foundation reads a /proc file, whose size is 0, only in part.)
        let maps = try DeployTools.output(try DeployTools.system("cat"), ["/proc/\(gateway.pid)/maps"])
        let files = Set(maps.split(separator: "\n").compactMap { entry -> String? in
            let fields = entry.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[5].hasPrefix("/") else { return nil }
            return fields[5...].joined(separator: " ")
        })
        XCTAssertTrue(files.contains(root.path.path + "/bin/attest-gateway"), "\(files.sorted())")
        XCTAssertTrue(files.contains { $0.hasSuffix("/libssl.so.3") }, "\(files.sorted())")
        for file in files {
            XCTAssertTrue(file.hasPrefix(root.path.path + "/"), "mapped from outside the clean root: \(file)")
            XCTAssertFalse(LinkedLibraries.isSwiftRuntime(file), file)
        }

        let health = try DeployTools.run(try DeployTools.system("curl"), ["-s", "-i", "http://127.0.0.1:\(adminPort)/healthz"])
        XCTAssertTrue(health.output.hasPrefix("HTTP/1.1 200"), health.output)
        let simulate = try root.run(["/bin/attestctl", "simulate", "--gateway", "http://127.0.0.1:\(port)",
                                     "--app-id", "ABCDE12345.com.example.demo", "--ca", "/tmp/ca", "--env", "development",
                                     "--route", "/demo/protected", "--requests", "3"])
        XCTAssertEqual(simulate.status, 0, simulate.output)
        let open = try DeployTools.run(try DeployTools.system("curl"), ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(port)/anything"])
        XCTAssertEqual(open.output, "200")

        kill(gateway.pid, SIGTERM)
        XCTAssertEqual(gateway.wait(), 0, gateway.output)
        let access = DeployTools.jsonLines(gateway.output).filter { $0["type"] as? String == "access" }
        XCTAssertTrue(access.contains { $0["path"] as? String == "/demo/protected" && $0["status"] as? Int == 200 && $0["verdict"] as? String == "valid" },
                      gateway.output)
        XCTAssertTrue(access.contains { $0["status"] as? Int == 401 }, "the replay is refused: \(gateway.output)")
        XCTAssertTrue(DeployTools.jsonLines(gateway.output).contains { $0["type"] as? String == "stopped" }, gateway.output)
    }

    /// The failing variant: the debug build (linked to the toolchain's libraries) cannot even start
    /// in such a root, so the root really lacks the toolchain.
    func testDebugBuildDoesNotStartInACleanRoot() throws {
        let root = try CleanRoot(binaries: [try BuiltProducts.executable("attest-gateway")])
        defer { root.remove() }
        let result = try root.run(["/bin/attest-gateway", "--version"])
        XCTAssertNotEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("libswift"), result.output)
    }
}
