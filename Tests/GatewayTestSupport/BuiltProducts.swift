import Foundation
import XCTest

/// Where tests find the package's executables: next to the test bundle (`swift build --build-tests`
/// puts `attest-gateway`, `attestctl` and `attest-fuzz` in the same products folder), else in
/// `.build/debug`.
public enum BuiltProducts {
    /// Full path of the built executable `name`.
    /// - Throws: `SetupFailure` (a test failure, never a skip) naming the build command when it has not been built.
    public static func executable(_ name: String) throws -> String {
        let dir = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [dir, dir.deletingLastPathComponent()] {
            let path = candidate.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        let built = SharedFixtures.packageRoot.appendingPathComponent(".build/debug/\(name)").path
        guard FileManager.default.isExecutableFile(atPath: built) else {
            throw SetupFailure("\(name) binary not built (run swift build --build-tests)")
        }
        return built
    }
}
