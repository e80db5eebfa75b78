import AttestClient
import Foundation
import XCTest

/// A store that cannot be read (the Keychain before the first unlock after a reboot) is not an empty
/// one: nothing is generated, registered or spent; the call fails (`.unavailable` for `send`).
final class UnreadableStoreTests: XCTestCase {
    /// The harness's memory store, unreadable while `locked` (`data(for:)` nil, `read` and `set` throw).
    final class LockableStore: AttestationStore, @unchecked Sendable {  // `locked` guarded by `lock`
        let inner = MemoryAttestationStore()
        private let lock = NSLock()
        private var isLocked = false
        var locked: Bool {
            get { lock.withLock { isLocked } }
            set { lock.withLock { isLocked = newValue } }
        }
        struct Unreadable: Error {}

        func data(for name: String) -> Data? { locked ? nil : inner.data(for: name) }
        func read(_ name: String) throws -> Data? {
            if locked { throw Unreadable() }
            return inner.data(for: name)
        }
        func set(_ data: Data?, for name: String) throws {
            if locked { throw Unreadable() }
            try inner.set(data, for: name)
        }
    }

    func testALockedStoreMakesNothingAndSpendsNothing() {
        let h = SDKHarness()
        let store = LockableStore()
        func launch() -> AttestClient {
            var configuration = AttestClientConfiguration(gateway: URL(string: "https://gateway.test")!)
            configuration.automaticRenewal = false
            return AttestClient(configuration: configuration, appAttest: h.appAttest, deviceKeys: h.keys, store: store, transport: h.gateway,
                                clock: h.clock, jitter: { 0 })
        }
        let first = launch().attest()
        XCTAssertEqual(first.verdict, .passed)
        let requests = h.gateway.requests.count
        let appAttestCalls = h.appAttest.recorded.count

        store.locked = true  // a background launch before the first unlock
        let background = launch()
        let response = background.send(SDKHarness.order(1))
        XCTAssertEqual(response.verdict, .unavailable, "\(response)")
        XCTAssertTrue(response.detail?.contains("cannot be read") == true, "\(response)")
        let attestation = background.attest()
        XCTAssertEqual(attestation.verdict, .failed)
        XCTAssertTrue(attestation.detail?.contains("cannot be read") == true, "\(attestation)")
        XCTAssertEqual(h.keys.count, 1, "no new device key")
        XCTAssertEqual(h.appAttest.recorded.count, appAttestCalls, "no App Attest key, no attestation")
        XCTAssertEqual(h.gateway.requests.count, requests, "nothing sent")

        store.locked = false
        let unlocked = launch()
        XCTAssertEqual(unlocked.storedAttestation()?.kid, first.kid)
        XCTAssertEqual(unlocked.send(SDKHarness.order(2)).verdict, .accepted)
    }
}
