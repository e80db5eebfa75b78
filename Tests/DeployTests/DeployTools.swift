import Foundation
import GatewayTestSupport
import XCTest

/// The external checkers the deployment tests run, and small helpers around them.
///
/// hadolint, checkov, kubernetes-validate and PyYAML live in a virtual environment of their own,
/// `.build/deploy-tools`, that `scripts/setup --tests` creates (all work offline). A missing tool
/// fails the test: it is a failed setup, never a skip.
enum DeployTools {
    /// The repository root.
    static let root = SharedFixtures.packageRoot

    /// Errors of the deployment tests' setup.
    enum SetupError: Error, CustomStringConvertible {
        /// A tool is not installed; carries its name and the install command.
        case missingTool(String)
        /// A command failed; carries its command line and output.
        case commandFailed(String, String)

        var description: String {
            switch self {
            case .missingTool(let name): return "\(name) is not installed: run scripts/setup --tests"
            case .commandFailed(let command, let output): return "\(command) failed:\n\(output)"
            }
        }
    }

    /// Full path of `name` in `.build/deploy-tools/bin`.
    /// - Throws: `SetupError.missingTool` when it is absent.
    static func tool(_ name: String) throws -> String {
        let path = root.appendingPathComponent(".build/deploy-tools/bin/\(name)").path
        guard FileManager.default.isExecutableFile(atPath: path) else { throw SetupError.missingTool(path) }
        return path
    }

    /// Full path of `name` in PATH.
    /// - Throws: `SetupError.missingTool` when it is absent.
    static func system(_ name: String) throws -> String {
        guard let path = try? ChildProcess.which(name) else { throw SetupError.missingTool(name) }
        return path
    }

    /// Runs `executable` with `arguments` to completion; returns exit status and combined output.
    @discardableResult
    static func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil,
                    currentDirectory: URL? = nil) throws -> (status: Int32, output: String) {
        try ChildProcess.run(executable, arguments, environment: environment, currentDirectory: currentDirectory)
    }

    /// Runs a linter from `.build/deploy-tools` in a network namespace of its own (`unshare --net`: no
    /// interface but a down loopback), so the check shows it works offline; checkov's update check is
    /// turned off too.
    static func offline(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        try run(try system("unshare"), ["--net", "--", try self.tool(tool)] + arguments,
                environment: ["CKV_SKIP_PACKAGE_UPDATE_CHECK": "true"])
    }

    /// Runs a command that must succeed; returns its output.
    /// - Throws: `SetupError.commandFailed` on a non-zero exit.
    static func output(_ executable: String, _ arguments: [String]) throws -> String {
        let result = try run(executable, arguments)
        guard result.status == 0 else {
            throw SetupError.commandFailed(([executable] + arguments).joined(separator: " "), result.output)
        }
        return result.output
    }

    /// Every YAML document of `file` (parsed by PyYAML's safe loader), as JSON values.
    static func yamlDocuments(_ file: URL) throws -> [Any] {
        let script = "import json, sys, yaml; print(json.dumps([d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]))"
        let text = try output(try tool("python"), ["-c", script, file.path])
        return try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [Any] ?? []
    }

    /// A new empty temporary folder.
    static func temporaryDirectory(_ label: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("attest-deploy-\(label)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The Swift toolchain's root (`/opt/swift/usr` for `/opt/swift/usr/bin/swift`): the folder no
    /// library of a packaged binary may come from.
    static func toolchainRoot() throws -> String {
        let swift = URL(fileURLWithPath: try system("swift")).resolvingSymlinksInPath()
        return swift.deletingLastPathComponent().deletingLastPathComponent().path
    }

    /// The JSON objects among `text`'s lines.
    static func jsonLines(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
        }
    }

    /// The port of the first `host:port` in `text` after `marker`, e.g. a `started` line's `listen`.
    static func port(in address: String) -> UInt16? {
        address.split(separator: ",").first?.split(separator: ":").last.flatMap { UInt16($0) }
    }
}
