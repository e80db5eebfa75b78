import Foundation

/// Locates the team's shared folder (`../shared` next to the repository) that tests read at run time:
/// `vectors/` (real device data), `tools/` (independent Python verifier and software device),
/// `bench/peers/`. Nothing from it is copied into the repository.
///
/// Override with the environment variable `ATTEST_SHARED_DIR`.
public enum SharedFixtures {
    /// The repository root (the folder holding `Package.swift`).
    public static let packageRoot: URL = {
        // This file lives at <root>/Tests/GatewayTestSupport/SharedFixtures.swift.
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
    }()

    /// `../shared`, or `nil` when it is absent (tests then skip and say so).
    public static let sharedDirectory: URL? = {
        if let env = ProcessInfo.processInfo.environment["ATTEST_SHARED_DIR"], !env.isEmpty {
            let url = URL(fileURLWithPath: env)
            return FileManager.default.fileExists(atPath: url.path) ? url : nil
        }
        let url = packageRoot.deletingLastPathComponent().appendingPathComponent("shared")
        return FileManager.default.fileExists(atPath: url.appendingPathComponent("vectors").path) ? url : nil
    }()

    /// `../shared/vectors`, or nil.
    public static var vectorsDirectory: URL? { sharedDirectory?.appendingPathComponent("vectors") }
    /// `../shared/tools`, or nil.
    public static var toolsDirectory: URL? { sharedDirectory?.appendingPathComponent("tools") }

    /// The message tests print when they skip for want of `../shared`.
    public static let absentMessage =
        "../shared is absent (set ATTEST_SHARED_DIR): tests that read real vectors or the reference tools are skipped, not passed"
}
