import Foundation
import GatewayConfig

/// `config`: `GatewayConfiguration.parse(bytes:baseDirectory:)` (libyaml events -> raw tree ->
/// validated configuration -> route table) on arbitrary bytes. The base folder is a private
/// temporary folder holding `root.pem` (the test root) so relative `trust.extra_roots` can succeed.
///
/// Invariants: it returns or throws `ConfigError` with at least one issue (never crashes or hangs:
/// libFuzzer's -timeout catches hangs); a configuration that parses parses again to an equal
/// configuration with the same warnings (no hidden state); an accepted configuration has at least
/// one listener, app and route.
enum ConfigHarness {
    static let harness = Harness(name: "config", summary: "GatewayConfiguration.parse(bytes:baseDirectory:), determinism") { run($0) }

    static let baseDirectory: String = {
        let folder = NSTemporaryDirectory() + "attest-fuzz-config-\(getpid())"
        try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        _ = FileManager.default.createFile(atPath: folder + "/root.pem", contents: Data(FuzzTrust.testRootPEM.utf8))
        return folder
    }()

    static func run(_ input: [UInt8]) {
        let h = "config"
        let first: LoadedConfiguration
        do {
            first = try GatewayConfiguration.parse(bytes: input, baseDirectory: baseDirectory)
        } catch {
            Invariant.check(!error.issues.isEmpty, h, "ConfigError without issues")
            return
        }
        guard let again = try? GatewayConfiguration.parse(bytes: input, baseDirectory: baseDirectory) else {
            Invariant.fail(h, "a configuration that parsed once is refused the second time")
        }
        Invariant.check(again.configuration == first.configuration, h, "parsing is not deterministic")
        Invariant.check(again.warnings.count == first.warnings.count, h, "warnings differ between two parses")
        Invariant.check(!first.configuration.routes.isEmpty && !first.configuration.listen.isEmpty && !first.configuration.apps.isEmpty,
                        h, "a configuration without routes, listeners or apps was accepted")
    }
}
