import Foundation
import XCTest
@testable import GatewayConfig

/// Shared helpers for the configuration tests.
enum ConfigTestHelpers {
    /// The repository's Config/ folder.
    static var configFolder: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Config")
    }

    /// A fresh temporary folder.
    static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("gwconfig-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A stand-in for the TLS layer's file checker (`ConfigCheckReport.check(path:checkFiles:)`):
    /// every file of `reference` must be readable and hold a PEM block.
    static func pemFilesExist(_ reference: TLSFileReference) -> [ConfigIssue] {
        reference.filePaths.compactMap { path in
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                return reference.issue(.error, "\(path) does not exist or cannot be read")
            }
            return text.contains("-----BEGIN ") ? nil : reference.issue(.error, "\(path) is not a PEM file")
        }
    }

    /// A minimal valid configuration; `extra` lines are appended at the top level.
    static func minimal(routes: String = """
        routes:
          - path_prefix: /
            upstream: app
        """, extra: String = "") -> String {
        """
        listen: 127.0.0.1:8080
        store: memory
        apps:
          - app_id: ABCDE12345.com.example.app
        upstreams:
          app: http://127.0.0.1:8081
        \(routes)
        \(extra)
        """
    }
}

/// Parses `yaml` and fails the test when it does not load.
func loadOK(_ yaml: String, base: String = "/tmp", file: StaticString = #filePath, line: UInt = #line) -> LoadedConfiguration? {
    do {
        return try GatewayConfiguration.parse(yaml: yaml, baseDirectory: base)
    } catch {
        XCTFail("expected the configuration to load, got:\n\(error)", file: file, line: line)
        return nil
    }
}

/// The error lines of `yaml` (fails the test when it loads).
func errorLines(_ yaml: String, base: String = "/tmp", file: StaticString = #filePath, line: UInt = #line) -> [String] {
    do {
        _ = try GatewayConfiguration.parse(yaml: yaml, baseDirectory: base)
        XCTFail("expected errors, but the configuration loaded", file: file, line: line)
        return []
    } catch {
        return error.issues.map(\.description)
    }
}

/// Asserts that `lines` contains exactly `expected` (shows all lines on failure).
func XCTAssertContainsLine(_ lines: [String], _ expected: String, file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertTrue(lines.contains(expected), "missing line:\n  \(expected)\ngot:\n  \(lines.joined(separator: "\n  "))", file: file, line: line)
}
