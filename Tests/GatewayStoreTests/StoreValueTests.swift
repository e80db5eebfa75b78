import GatewayStore
import GatewayTestSupport
import XCTest

/// Input validation of the store's value types and the base64url key-name encoding.
final class StoreValueTests: XCTestCase {
    func testKeyIdMustBe32Bytes() {
        XCTAssertNoThrow(try KeyID([UInt8](repeating: 1, count: 32)))
        XCTAssertThrowsError(try KeyID([UInt8](repeating: 1, count: 31))) { XCTAssertEqual($0 as? StoreInputError, .keyIdLength(31)) }
        XCTAssertThrowsError(try KeyID([UInt8](repeating: 1, count: 33))) { XCTAssertEqual($0 as? StoreInputError, .keyIdLength(33)) }
        XCTAssertThrowsError(try KeyID([UInt8]()))
    }

    func testChallengeLengthBounds() {
        XCTAssertNoThrow(try Challenge([UInt8](repeating: 0, count: 16)))
        XCTAssertNoThrow(try Challenge([UInt8](repeating: 0, count: 64)))
        XCTAssertThrowsError(try Challenge([UInt8](repeating: 0, count: 15))) { XCTAssertEqual($0 as? StoreInputError, .challengeLength(15)) }
        XCTAssertThrowsError(try Challenge([UInt8](repeating: 0, count: 65))) { XCTAssertEqual($0 as? StoreInputError, .challengeLength(65)) }
    }

    func testKeyRecordValidatesPublicKeyAndAppId() throws {
        let keyId = try KeyID([UInt8](repeating: 7, count: 32))
        let point = [0x04] + [UInt8](repeating: 9, count: 64)
        XCTAssertNoThrow(try KeyRecord(keyId: keyId, publicKey: point, environment: .production, appId: "T.a", createdAt: 0))
        XCTAssertThrowsError(try KeyRecord(keyId: keyId, publicKey: [0x02] + point.dropFirst(), environment: .production,
                                           appId: "T.a", createdAt: 0)) { XCTAssertEqual($0 as? StoreInputError, .publicKey(65)) }
        XCTAssertThrowsError(try KeyRecord(keyId: keyId, publicKey: Array(point.prefix(33)), environment: .production,
                                           appId: "T.a", createdAt: 0))
        for bad in ["", "has space", "tab\t", "é", String(repeating: "a", count: 256)] {
            XCTAssertThrowsError(try KeyRecord(keyId: keyId, publicKey: point, environment: .production, appId: bad, createdAt: 0),
                                 "appId \(bad.debugDescription)") { XCTAssertEqual($0 as? StoreInputError, .appId) }
        }
    }

    func testTrustTierIdentifiers() {
        XCTAssertEqual(TrustTier.appAttest.rawValue, "app_attest")
        XCTAssertNotNil(TrustTier(rawValue: "device_check_2"))
        XCTAssertNil(TrustTier(rawValue: ""))
        XCTAssertNil(TrustTier(rawValue: "Upper"))
        XCTAssertNil(TrustTier(rawValue: "a-b"))
        XCTAssertNil(TrustTier(rawValue: String(repeating: "a", count: 65)))
    }

    func testBase64URLMatchesFoundationWithoutPadding() {
        var rng = SplitMix64(seed: 1)
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let reference = Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            XCTAssertEqual(String(decoding: Base64URL.encode(bytes), as: UTF8.self), reference, "length \(length)")
        }
    }

    func testRefusalCodesAreStable() {
        XCTAssertEqual(StoreRefusal.allCases.map(\.code), [
            "challenge_unknown", "challenge_expired", "challenge_wrong_purpose", "key_unknown", "key_revoked",
            "key_expired", "key_exists", "counter_replay",
        ])
        XCTAssertEqual(StoreUnavailable.code, "store_unavailable")
    }

    func testChallengeLifetimeClampsWithoutOverflow() {
        XCTAssertEqual(StoreLimits.challengeLifetime(expiresAt: 1_300, now: 1_000), 300)
        XCTAssertEqual(StoreLimits.challengeLifetime(expiresAt: 900, now: 1_000), 0)
        XCTAssertEqual(StoreLimits.challengeLifetime(expiresAt: .max, now: .min), StoreLimits.maximumChallengeLifetime)
        XCTAssertEqual(StoreLimits.challengeLifetime(expiresAt: .min, now: .max), 0)
    }
}
