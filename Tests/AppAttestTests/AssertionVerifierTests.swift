@testable import AppAttest
import AttestCrypto
import XCTest

final class AssertionVerifierTests: XCTestCase {
    let appId = "ABCDE12345.com.example.gateway-test"
    let clientData = Array("client data".utf8)

    func verify(_ object: [UInt8], key: ECPrivateKey, previous: UInt32? = 0, appId: String? = nil, clientData: [UInt8]? = nil) throws -> AssertionDecision {
        AssertionVerifier.verify(assertionObject: object, publicKey: try key.publicKey(), appId: appId ?? self.appId,
                                 clientData: clientData ?? self.clientData, previousCounter: previous)
    }

    func testValidAssertionAndCounter() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let object = try mintAssertion(key: key, appId: appId, counter: 5, clientData: clientData)
        let decision = try verify(object, key: key, previous: 4)
        XCTAssertEqual(decision.counter, 5, "\(String(describing: decision.reason))")
        XCTAssertEqual(decision.trace[.signature], true)
        XCTAssertEqual(decision.trace[.rpIdHash], true)
        XCTAssertEqual(decision.trace[.counterGreaterThanPrevious], true)
        XCTAssertTrue(try verify(object, key: key, previous: nil).isAccepted)
        // Counter not increasing.
        XCTAssertEqual(try verify(object, key: key, previous: 5).reason, .counterReplay)
        XCTAssertEqual(try verify(object, key: key, previous: 6).reason, .counterReplay)
        XCTAssertEqual(try verify(object, key: key, previous: 6).trace[.signature], true)
        // Other app, other client data, other key.
        XCTAssertEqual(try verify(object, key: key, appId: "ZZZZZZZZZZ.com.example.gateway-test").reason, .rpIdMismatch)
        XCTAssertEqual(try verify(object, key: key, clientData: clientData + [0]).reason, .badSignature)
        XCTAssertEqual(try verify(object, key: try ECPrivateKey(generatingOn: .p256)).reason, .badSignature)
        // The hash-based entry point agrees.
        let viaHash = AssertionVerifier.verify(assertionObject: object, publicKey: try key.publicKey(), rpIdHash: SHA256.hash(utf8: appId),
                                               clientDataHash: SHA256.hash(clientData), previousCounter: 0)
        XCTAssertEqual(viaHash.counter, 5)
    }

    func testNonceTreatedAsPrehashedDigestIsRejected() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        // Forged the wrong way: ECDSA over the nonce as if it were the digest.
        let forged = try mintAssertion(key: key, appId: appId, counter: 1, clientData: clientData) { _, nonce in try key.signature(forDigest: nonce) }
        let decision = try verify(forged, key: key)
        XCTAssertEqual(decision.reason, .badSignature)
        XCTAssertEqual(decision.trace[.signature], false)
        // The right way verifies.
        XCTAssertTrue(try verify(try mintAssertion(key: key, appId: appId, counter: 1, clientData: clientData), key: key).isAccepted)
    }

    func testSignatureEncodings() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        var seen: Set<Int> = []
        var attempt: UInt32 = 0
        while seen.count < 3 && attempt < 3000 {
            attempt += 1
            var signatureUsed: [UInt8] = []
            let object = try mintAssertion(key: key, appId: appId, counter: attempt, clientData: clientData) { _, nonce in
                signatureUsed = try key.signature(for: nonce)
                return signatureUsed
            }
            guard (70...72).contains(signatureUsed.count), !seen.contains(signatureUsed.count) else { continue }
            seen.insert(signatureUsed.count)
            XCTAssertTrue(try verify(object, key: key).isAccepted, "valid \(signatureUsed.count)-byte DER signature")
            let variants: [(String, [UInt8])] = [
                ("truncated", Array(signatureUsed.dropLast())),
                ("padded", signatureUsed + [0x00]),
                ("raw r||s", ECDSARaw.raw(signatureUsed)),
                ("long-form length", [0x30, 0x81] + signatureUsed.dropFirst()),
            ]
            for (name, bad) in variants {
                let tampered = try mintAssertion(key: key, appId: appId, counter: attempt, clientData: clientData) { _, _ in bad }
                XCTAssertEqual(try verify(tampered, key: key).reason, .signatureEncoding, "\(name) of \(signatureUsed.count)")
            }
        }
        XCTAssertEqual(seen, [70, 71, 72])
    }

    func testKeysWithLeadingZeroCoordinates() throws {
        var found: [ECPrivateKey] = []
        var tries = 0
        while found.count < 2 && tries < 20_000 {
            tries += 1
            let key = try ECPrivateKey(generatingOn: .p256)
            if (found.isEmpty && key.publicKeyPoint[1] == 0) || (found.count == 1 && key.publicKeyPoint[33] == 0) { found.append(key) }
        }
        XCTAssertEqual(found.count, 2)
        for key in found {
            let object = try mintAssertion(key: key, appId: appId, counter: 1, clientData: clientData)
            XCTAssertTrue(try verify(object, key: key).isAccepted)
            // Through a minted attestation too: keyId over the 65-byte padded point, COSE x/y of 32 bytes.
            let m = try MintedAttestation(ca: AttestationVerifierTests.ca, deviceKey: key)
            let decision = try m.verify()
            XCTAssertEqual(decision.attestedKey?.publicKeyPoint, key.publicKeyPoint, decision.detail)
        }
    }

    func testMalformedAssertions() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        let object = try mintAssertion(key: key, appId: appId, counter: 1, clientData: clientData)
        XCTAssertEqual(try verify(object + [0], key: key).reason, .cborMalformed)
        XCTAssertEqual(try verify(Array(object.dropLast()), key: key).reason, .cborMalformed)
        XCTAssertEqual(try verify(TestCBOR.map([(.text("signature"), .bytes([1]))]).encoded, key: key).reason, .assertionMalformed)
        XCTAssertEqual(try verify(TestCBOR.map([(.text("signature"), .text("x")), (.text("authenticatorData"), .bytes([1]))]).encoded, key: key).reason,
                       .assertionMalformed)
        XCTAssertEqual(try verify(TestCBOR.map([(.text("signature"), .bytes([1])), (.text("authenticatorData"), .bytes([1, 2]))]).encoded, key: key).reason,
                       .authDataMalformed)
        let dup = TestCBOR.map([(.text("signature"), .bytes([1])), (.text("signature"), .bytes([1])), (.text("authenticatorData"), .bytes([1]))])
        XCTAssertEqual(try verify(dup.encoded, key: key).reason, .cborMalformed)
    }

    func testIOS27MapOnAssertions() throws {
        let key = try ECPrivateKey(generatingOn: .p256)
        // Present (AT flag set, no credential block, no ED flag).
        let present = try mintAssertion(key: key, appId: appId, counter: 2, clientData: clientData, flags: 0x40, trailing: ios27Map(category: [3, 0, 0, 0]))
        let decision = try verify(present, key: key)
        guard case .accepted(let result) = decision else { return XCTFail("\(String(describing: decision.reason))") }
        XCTAssertEqual(result.signals, AuthenticatorSignals(validationCategory: [3, 0, 0, 0], bundleVersion: "1"))
        // Absent.
        guard case .accepted(let plain) = try verify(try mintAssertion(key: key, appId: appId, counter: 2, clientData: clientData), key: key) else {
            return XCTFail()
        }
        XCTAssertNil(plain.signals)
        // Malformed, or followed by more bytes: refused even though signed.
        for trailing in [ios27Map() + [0x00], Array(ios27Map().dropLast()), [0x9F, 0xFF], TestCBOR.map([(.text("apple_bundle_version_01"), .int(1))]).encoded] {
            let object = try mintAssertion(key: key, appId: appId, counter: 2, clientData: clientData, trailing: trailing)
            XCTAssertEqual(try verify(object, key: key).reason, .authDataMalformed)
        }
    }
}

enum ECDSARaw {
    /// r || s (32 bytes each) from a strict DER signature.
    static func raw(_ der: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        var i = 2
        for _ in 0..<2 {
            let length = Int(der[i + 1])
            let value = Array(der[(i + 2)..<(i + 2 + length)].drop { $0 == 0 })
            out += [UInt8](repeating: 0, count: 32 - value.count) + value
            i += 2 + length
        }
        return out
    }
}
