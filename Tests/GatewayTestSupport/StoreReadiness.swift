import Foundation
import GatewayStore
import XCTest

/// Waiting for a store that connects in the background (`RedisStore`) to answer.
public enum StoreReadiness {
    /// Polls `ping` until it succeeds, for at most `timeout` seconds; then fails the test (at the
    /// caller's line) and throws, instead of hanging.
    public static func waitUntilReady(_ store: any AttestStore, timeout: Double = 20,
                                      file: StaticString = #filePath, line: UInt = #line) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            let box = CompletionBox<Bool>()
            store.ping { result in box.put((try? result.get()) != nil) }
            if box.take(timeout: 5) == true { return }
            Thread.sleep(forTimeInterval: 0.025)
        }
        throw SetupFailure("the store did not become ready within \(timeout) s", file: file, line: line)
    }
}
