import Foundation
import GatewayTestSupport
import XCTest

/// Base of the end-to-end test classes: one `E2EEnvironment` per class (redis-server, upstream,
/// gateway), started by the first test that needs it and stopped when the class finishes. Every test
/// makes its own device keys, so tests do not depend on each other's order; the clock is reset after
/// each test.
class E2ETestCase: XCTestCase {
    /// Which store the class's gateway uses.
    class var storeKind: E2EEnvironment.StoreKind { .redis }
    /// How the class's requests reach the gateway (HTTP/1.1 plain by default).
    class var transport: ClientTransport { .http1 }
    /// The class's `admin:` value (an address or a mapping with `ready_requires_store`).
    class var admin: String { "127.0.0.1:0" }
    /// The class's `endpoints.next_challenge` (default true).
    class var nextChallenge: Bool { true }
    /// Whether every test of the class needs ../shared/tools/ref_device.py.
    class var needsRefDevice: Bool { true }

    nonisolated(unsafe) private static var environments: [ObjectIdentifier: E2EEnvironment] = [:]  // guarded by `lock`
    private static let lock = NSLock()

    /// The class's environment.
    var env: E2EEnvironment!

    override func setUpWithError() throws {
        try super.setUpWithError()
        if Self.needsRefDevice, !E2EPaths.hasRefDevice { throw XCTSkip(SharedFixtures.absentMessage) }
        env = try Self.sharedEnvironment()
    }

    override func tearDown() {
        env?.clock.reset()
        super.tearDown()
    }

    override class func tearDown() {
        lock.lock()
        let environment = environments.removeValue(forKey: ObjectIdentifier(self))
        lock.unlock()
        environment?.stop()
        super.tearDown()
    }

    private class func sharedEnvironment() throws -> E2EEnvironment {
        lock.lock(); defer { lock.unlock() }
        if let existing = environments[ObjectIdentifier(self)] { return existing }
        let made = try E2EEnvironment(store: storeKind, transport: transport, admin: admin, nextChallenge: nextChallenge)
        environments[ObjectIdentifier(self)] = made
        return made
    }
}
