@testable import AppAttest
import AttestCrypto
import GatewayRules
import XCTest

final class AuthenticatorDataTests: XCTestCase {
    let rpIdHash = SHA256.hash(Array("ABCDE12345.com.example".utf8))

    func assertionData(flags: UInt8 = 0x40, counter: UInt32 = 7, trailing: [UInt8] = []) -> [UInt8] {
        rpIdHash + [flags] + withUnsafeBytes(of: counter.bigEndian, Array.init) + trailing
    }

    func testAssertionLayoutAndIOS27Map() throws {
        let plain = try AuthenticatorData(assertionData(), kind: .assertion)
        XCTAssertEqual(plain.rpIdHash, rpIdHash)
        XCTAssertEqual(plain.counter, 7)
        XCTAssertEqual(plain.flags, 0x40)
        XCTAssertNil(plain.signals)
        XCTAssertNil(plain.credentialId)
        let withMap = try AuthenticatorData(assertionData(trailing: ios27Map(category: [3, 0, 0, 0], version: "2.1")), kind: .assertion)
        XCTAssertEqual(withMap.signals, AuthenticatorSignals(validationCategory: [3, 0, 0, 0], bundleVersion: "2.1"))
        XCTAssertEqual(withMap.extensionBytes, ios27Map(category: [3, 0, 0, 0], version: "2.1"))
        // ED flag with a map is fine; with nothing after the fixed fields it is not.
        XCTAssertNoThrow(try AuthenticatorData(assertionData(flags: 0xC0, trailing: ios27Map()), kind: .assertion))
        XCTAssertThrowsError(try AuthenticatorData(assertionData(flags: 0xC0), kind: .assertion))
        // Unknown keys are tolerated and listed.
        let other = TestCBOR.map([(.text("future_key"), .int(1))]).encoded
        XCTAssertEqual(try AuthenticatorData(assertionData(trailing: other), kind: .assertion).signals?.otherKeys, ["future_key"])
    }

    func testMalformedTrailingData() {
        let map = ios27Map()
        let cases: [(String, [UInt8])] = [
            ("bytes after the map", map + [0x00]),
            ("two maps", map + map),
            ("truncated map", Array(map.dropLast())),
            ("not a map", TestCBOR.array([.int(1)]).encoded),
            ("single garbage byte", [0x00]),
            ("indefinite map", [0xBF, 0x61, 0x61, 0x01, 0xFF]),
            ("duplicate key", TestCBOR.map([(.text("apple_bundle_version_01"), .text("1")), (.text("apple_bundle_version_01"), .text("2"))]).encoded),
            ("wrong type for category", TestCBOR.map([(.text("apple_validation_category_01"), .text("1"))]).encoded),
            ("wrong type for version", TestCBOR.map([(.text("apple_bundle_version_01"), .bytes([1]))]).encoded),
            ("integer key", TestCBOR.map([(.int(1), .int(1))]).encoded),
        ]
        for (name, trailing) in cases {
            XCTAssertThrowsError(try AuthenticatorData(assertionData(trailing: trailing), kind: .assertion), name)
        }
        XCTAssertThrowsError(try AuthenticatorData(Array(assertionData().dropLast()), kind: .assertion), "36 bytes")
    }

    func testAttestationLayout() throws {
        let ca = try TestCA()
        var minted = try MintedAttestation(ca: ca)
        let parsed = try AuthenticatorData(minted.authData, kind: .attestation)
        XCTAssertEqual(parsed.aaguid, AppAttestEnvironment.development.aaguid)
        XCTAssertEqual(parsed.credentialId, minted.keyId)
        XCTAssertEqual(parsed.credentialPublicKey?.x963Representation, minted.deviceKey.publicKeyPoint)
        XCTAssertNil(parsed.signals)
        minted.trailing = ios27Map()
        XCTAssertEqual(try AuthenticatorData(minted.authData, kind: .attestation).signals?.bundleVersion, "1")
        minted.trailing = ios27Map() + [0]
        XCTAssertThrowsError(try AuthenticatorData(minted.authData, kind: .attestation))
        minted.trailing = []
        minted.flags = 0x00
        XCTAssertThrowsError(try AuthenticatorData(minted.authData, kind: .attestation), "AT flag missing")
        let full = try MintedAttestation(ca: ca).authData
        XCTAssertThrowsError(try AuthenticatorData(Array(full.prefix(54)), kind: .attestation))
        XCTAssertThrowsError(try AuthenticatorData(Array(full.prefix(90)), kind: .attestation), "credentialId cut")
        XCTAssertThrowsError(try AuthenticatorData(Array(full.dropLast()), kind: .attestation), "COSE key cut")
    }
}
