import AttestClient
import Foundation
import XCTest

/// A store that cannot be read (the Keychain before the first unlock after a reboot) is not an empty
/// one: nothing is generated, registered or spent; the call fails (`.unavailable` for `send`).
final class UnreadableStoreTests: XCTestCase {
    /// What the locked store throws for every read and write.
    struct Unreadable: Error {}

    func testALockedStoreMakesNothingAndSpendsNothing() {
        let h = SDKHarness()
        let store = FaultyAttestationStore()
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

        store.fault = { _, _ in Unreadable() }  // a background launch before the first unlock
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

        store.fault = { _, _ in nil }
        let unlocked = launch()
        XCTAssertEqual(unlocked.storedAttestation()?.kid, first.kid)
        XCTAssertEqual(unlocked.send(SDKHarness.order(2)).verdict, .accepted)
    }
}
