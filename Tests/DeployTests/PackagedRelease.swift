import Foundation
import GatewayTestSupport
import XCTest

/// The release tarball of `scripts/package`, unpacked once per test process.
///
/// Which tarball: `ATTEST_PACKAGE_TARBALL` (scripts/test builds it once and sets it; then it must
/// exist), else the newest `.build/package/attest-gateway-*.tar.gz`. With neither the tests fail (a
/// failed setup, never a skip) and name the command: building the release takes minutes, so
/// `swift test` does not do it itself; scripts/test, which CI runs, always does.
final class PackagedRelease: @unchecked Sendable {  // immutable after init; `shared` guarded by `lock`
    /// The unpacked `attest-gateway-VERSION-linux-ARCH` folder.
    let directory: URL
    /// The tarball it came from.
    let tarball: URL

    var gateway: String { directory.appendingPathComponent("bin/attest-gateway").path }
    var attestctl: String { directory.appendingPathComponent("bin/attestctl").path }

    /// The Debian packages listed in the tarball's RUNTIME-PACKAGES.
    func runtimePackages() throws -> Set<String> {
        let text = try String(contentsOf: directory.appendingPathComponent("RUNTIME-PACKAGES"), encoding: .utf8)
        return Set(text.split(separator: "\n").map(String.init))
    }

    private init(tarball: URL) throws {
        self.tarball = tarball
        // One unpacked copy on disk (about 150 MB), replaced by each test process.
        let into = FileManager.default.temporaryDirectory.appendingPathComponent("attest-deploy-unpacked-release")
        try? FileManager.default.removeItem(at: into)
        try FileManager.default.createDirectory(at: into, withIntermediateDirectories: true)
        _ = try DeployTools.output(try DeployTools.system("tar"), ["-xzf", tarball.path, "-C", into.path])
        let entries = try FileManager.default.contentsOfDirectory(atPath: into.path)
        guard entries.count == 1, let name = entries.first, name.hasPrefix("attest-gateway-") else {
            throw DeployTools.SetupError.commandFailed("tar -xzf \(tarball.path)", "expected one attest-gateway-* folder, found \(entries)")
        }
        directory = into.appendingPathComponent(name)
    }

    private static let lock = NSLock()
    nonisolated(unsafe) private static var cached: PackagedRelease?  // guarded by `lock`

    /// The unpacked release.
    /// - Throws: `DeployTools.SetupError` (the test fails) when no tarball was built, or when
    ///   `ATTEST_PACKAGE_TARBALL` names a missing file.
    static func shared() throws -> PackagedRelease {
        lock.lock(); defer { lock.unlock() }
        if let cached { return cached }
        let release = try PackagedRelease(tarball: try locate())
        cached = release
        return release
    }

    private static func locate() throws -> URL {
        if let path = ProcessInfo.processInfo.environment["ATTEST_PACKAGE_TARBALL"], !path.isEmpty {
            guard FileManager.default.fileExists(atPath: path) else {
                throw DeployTools.SetupError.commandFailed("ATTEST_PACKAGE_TARBALL", "\(path) does not exist")
            }
            return URL(fileURLWithPath: path)
        }
        let folder = DeployTools.root.appendingPathComponent(".build/package")
        let candidates = ((try? FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: [.contentModificationDateKey])) ?? [])
            .filter { $0.lastPathComponent.hasPrefix("attest-gateway-") && $0.lastPathComponent.hasSuffix(".tar.gz") }
        let newest = candidates.max { a, b in
            let da = (try? a.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            let db = (try? b.resourceValues(forKeys: [.contentModificationDateKey]).contentModificationDate) ?? .distantPast
            return da < db
        }
        guard let newest else {
            throw DeployTools.SetupError.commandFailed("scripts/package", "no release tarball in .build/package: run scripts/package (scripts/test does, before swift test)")
        }
        return newest
    }
}
