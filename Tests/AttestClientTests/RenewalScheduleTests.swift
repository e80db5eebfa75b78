import AttestClient
import Foundation
import XCTest

/// Automatic renewal against a `renewAfter` the device sees in its past (clock skew, or a hostile
/// gateway): renewals are planned at least 60 s apart, doubling while renewing does not move the
/// refresh time into the future. Checked on the plan (`nextAttestationRefresh`), no real timer.
final class RenewalScheduleTests: XCTestCase {
    func testARenewAfterInThePastBacksOffInsteadOfRenewingEverySecond() throws {
        let h = SDKHarness(appAttest: false)
        nonisolated(unsafe) var renewAfter: (() -> Int)? = { Int(h.clock.now()) - 60 }
        h.gateway.rewrite = { request, answer in
            guard let renewAfter, request.url.path.hasSuffix("/register") || request.url.path.hasSuffix("/renew") else { return answer }
            return FakeGateway.withJSON(answer) { $0["renewAfter"] = renewAfter() }
        }
        XCTAssertEqual(h.client.attest().verdict, .passed)
        func planned() throws -> Double { try XCTUnwrap(h.client.nextAttestationRefresh).timeIntervalSince1970 - h.clock.now() }
        XCTAssertEqual(try planned(), 60, "not in the past: at least 60 s from now")
        for expected in [120.0, 240, 480] {
            XCTAssertEqual(h.client.renewAttestation().verdict, .passed)
            XCTAssertEqual(try planned(), expected, "doubling while renewAfter stays in the past")
        }
        // A renewAfter only just ahead is held to the 60 s minimum as well.
        renewAfter = { Int(h.clock.now()) + 1 }
        XCTAssertEqual(h.client.renewAttestation().verdict, .passed)
        XCTAssertEqual(try planned(), 60)
        // A sane renewAfter (the gateway's TTL / 2 ahead) is used as is, and ends the doubling.
        renewAfter = nil
        XCTAssertEqual(h.client.renewAttestation().verdict, .passed)
        XCTAssertEqual(try planned(), 43_200)
        renewAfter = { Int(h.clock.now()) - 60 }
        XCTAssertEqual(h.client.renewAttestation().verdict, .passed)
        XCTAssertEqual(try planned(), 60, "the doubling starts again")
        // Re-arming from the cache (attest(), storedAttestation()) keeps the plan.
        h.clock.advance(10)
        XCTAssertNotNil(h.client.storedAttestation())
        XCTAssertEqual(try planned(), 50)
    }
}
