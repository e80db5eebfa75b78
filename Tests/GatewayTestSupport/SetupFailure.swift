import Foundation
import XCTest

/// A test's set-up failed or a wait timed out: thrown from a test method, it fails the test (XCTest
/// records a thrown error as a failure), never skips it. `XCTSkip` is kept for an absent `../shared`
/// (`SharedFixtures.absentMessage`) and for a platform that truly lacks a feature, detected precisely
/// (`PlatformSupport`).
public struct SetupFailure: Error, CustomStringConvertible {
    public let description: String

    /// Records an `XCTFail` at the caller's line as well, so the failure points at the wait that timed
    /// out even when the error is caught and rethrown further up.
    public init(_ description: String, file: StaticString = #filePath, line: UInt = #line) {
        self.description = description
        XCTFail(description, file: file, line: line)
    }
}
