import Foundation
import GatewayTestSupport

/// One redis-server shared by the conformance tests of this process (started on first use, killed at
/// exit by `RedisServer`'s deinit is not guaranteed for statics, so it is stopped by an atexit hook).
/// A missing redis-server fails the tests that need it (it is a test dependency installed by .ci/run).
enum SharedRedis {
    nonisolated(unsafe) private static var shared: RedisServer?
    private static let lock = NSLock()

    static func server() throws -> RedisServer {
        lock.lock(); defer { lock.unlock() }
        if let shared { return shared }
        let server = try RedisServer()
        shared = server
        atexit { SharedRedis.stopShared() }
        return server
    }

    private static func stopShared() {
        lock.lock(); defer { lock.unlock() }
        shared?.stop()
        shared = nil
    }
}
