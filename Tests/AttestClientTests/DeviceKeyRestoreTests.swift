import AttestClient
import Foundation
import XCTest

/// A stored device key that cannot be restored is replaced, and the registration says so; a new key
/// that cannot be stored is never registered (its registration would be orphaned at the next launch).
final class DeviceKeyRestoreTests: XCTestCase {
    /// What the store throws for a write of the device key while it refuses them.
    struct Full: Error, CustomStringConvertible { var description: String { "the store is full" } }

    func testAStoredKeyThatCannotBeRestoredIsReplacedAndTheRegistrationSaysSo() throws {
        let h = SDKHarness(appAttest: false)
        let first = h.client.attest()
        XCTAssertEqual(first.verdict, .passed, "\(first)")
        XCTAssertFalse(first.detail?.contains("could not be restored") == true, "a restorable key is not reported: \(first)")
        XCTAssertEqual(h.relaunch().send(SDKHarness.order(1)).verdict, .accepted, "the stored key restores across launches")
        XCTAssertEqual(h.keys.count, 1)

        // Another device's Secure Enclave blob (a file store restored from a backup): the factory cannot restore it.
        try h.store.set(Data("another device's key".utf8), for: "device-key")
        let client = h.relaunch()
        let response = client.send(SDKHarness.order(2))
        XCTAssertEqual(response.verdict, .accepted, "re-registered with a new key and resent: \(response)")
        let replaced = try XCTUnwrap(client.lastAttestation)
        XCTAssertEqual(replaced.verdict, .passed)
        XCTAssertNotEqual(replaced.kid, first.kid)
        XCTAssertEqual(h.keys.count, 2)
        let detail = try XCTUnwrap(replaced.detail, "\(replaced)")
        XCTAssertTrue(detail.contains("the stored device key could not be restored ("), detail)
        XCTAssertTrue(detail.contains("a new key replaced it"), detail)

        // The new key was stored: the next launch restores it, and nothing more is made.
        XCTAssertEqual(h.relaunch().send(SDKHarness.order(3)).verdict, .accepted)
        XCTAssertEqual(h.keys.count, 2)
    }

    func testANewKeyThatCannotBeStoredIsNotRegisteredAndNothingIsSpent() {
        let h = SDKHarness()  // App Attest supported: a registration would spend an attestation
        let store = FaultyAttestationStore()
        store.fault = { operation, name in operation == .write && name == "device-key" ? Full() : nil }
        func launch() -> AttestClient {
            var configuration = AttestClientConfiguration(gateway: URL(string: "https://gateway.test")!)
            configuration.automaticRenewal = false
            return AttestClient(configuration: configuration, appAttest: h.appAttest, deviceKeys: h.keys, store: store, transport: h.gateway,
                                clock: h.clock, jitter: { 0 })
        }
        let refused = launch().attest()
        XCTAssertEqual(refused.verdict, .failed, "\(refused)")
        XCTAssertTrue(refused.detail?.contains("the new device key could not be stored (the store is full); nothing registered or spent") == true,
                      "\(refused)")
        XCTAssertEqual(h.gateway.requests.count, 0, "nothing sent")
        XCTAssertEqual(h.appAttest.recorded.count, 0, "no App Attest key made, no attestation spent")
        XCTAssertNil(store.inner.data(for: "device-key"))
        XCTAssertNil(store.inner.data(for: "registration"))

        store.fault = { _, _ in nil }
        let client = launch()
        let passed = client.attest()
        XCTAssertEqual(passed.verdict, .passed, "\(passed)")
        XCTAssertNotNil(store.inner.data(for: "device-key"))
        XCTAssertEqual(launch().send(SDKHarness.order(1)).verdict, .accepted, "the stored key restores at the next launch")
    }
}
