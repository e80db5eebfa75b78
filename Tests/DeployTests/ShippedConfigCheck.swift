import Foundation
import GatewayTestSupport
import XCTest

/// `attest-gateway check-config` (the build under test) on a configuration a deployment artefact
/// ships: a compose file's mounted YAML, a ConfigMap's `gateway.yaml`.
///
/// The secret files the configuration names (`password_file: /run/secrets/...`) exist only in the
/// container; each is mapped to a temporary file holding a password, and nothing else is changed.
enum ShippedConfigCheck {
    /// Checks `yaml` after replacing each of `secretFiles` (paths in the container) with a temporary
    /// file; returns check-config's exit status and output.
    static func check(yaml: String, secretFiles: [String]) throws -> (status: Int32, output: String) {
        let work = try DeployTools.temporaryDirectory("config")
        defer { try? FileManager.default.removeItem(at: work) }
        var text = yaml
        for (index, path) in secretFiles.enumerated() {
            XCTAssertTrue(text.contains(path), "the configuration does not name \(path)")
            let file = work.appendingPathComponent("secret-\(index)")
            try "a-password-\(UUID().uuidString)".write(to: file, atomically: true, encoding: .utf8)
            text = text.replacingOccurrences(of: path, with: file.path)
        }
        let config = work.appendingPathComponent("gateway.yaml")
        try text.write(to: config, atomically: true, encoding: .utf8)
        return try DeployTools.run(try BuiltProducts.executable("attest-gateway"), ["check-config", config.path])
    }

    /// The value of `timeouts.drain` in `yaml`, in seconds (the `drain: Ns` line).
    static func drainSeconds(_ yaml: String) -> Int? {
        for line in yaml.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("drain:") else { continue }
            let value = trimmed.dropFirst("drain:".count).trimmingCharacters(in: .whitespaces).prefix { $0 != " " }
            if value.hasSuffix("s"), let seconds = Int(value.dropLast()) { return seconds }
        }
        return nil
    }
}
