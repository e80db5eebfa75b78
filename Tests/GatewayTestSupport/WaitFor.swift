import Foundation
import XCTest

/// Polls `condition` every 10 ms until it holds; fails the test (never skips) when `timeout` seconds
/// pass first. For outcomes a server reports after the client already saw its answer (access
/// records, handshake reports); no timing is asserted.
public func waitFor(_ what: String, timeout: TimeInterval = 5, file: StaticString = #filePath, line: UInt = #line,
                    _ condition: () -> Bool) {
    let deadline = Date().addingTimeInterval(timeout)
    while !condition() {
        if Date() > deadline { return XCTFail("timed out waiting for: \(what)", file: file, line: line) }
        usleep(10_000)
    }
}
