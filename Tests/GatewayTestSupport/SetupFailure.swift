import Foundation

/// A test's set-up failed or a wait timed out: thrown from a test method (or its set-up), it fails
/// the test (XCTest records a thrown error as a failure), never skips it. `XCTSkip` is kept for an
/// absent `../shared` (`SharedFixtures.absentMessage`) and for a platform that truly lacks a feature,
/// detected precisely (`PlatformSupport`).
public struct SetupFailure: Error, CustomStringConvertible {
    public let description: String

    /// `file` and `line` (the caller's, by default) are part of the description, so the failure names
    /// the wait that timed out even when the error is thrown further up.
    public init(_ description: String, file: StaticString = #filePath, line: UInt = #line) {
        self.description = "\(description) (at \(URL(fileURLWithPath: "\(file)").lastPathComponent):\(line))"
    }
}
