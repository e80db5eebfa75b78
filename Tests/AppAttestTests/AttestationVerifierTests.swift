@testable import AppAttest
import AttestCrypto
import XCTest

/// Attestations minted under a test CA: a passing case and a failing variant for each check.
final class AttestationVerifierTests: XCTestCase {
    static let ca: TestCA = { try! TestCA() }()  // test fixture; failure to mint a CA is a test bug

    func minted() throws -> MintedAttestation { try MintedAttestation(ca: Self.ca) }

    func assertRejected(_ decision: AttestationDecision, _ reason: ReasonCode, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertFalse(decision.isAccepted, file: file, line: line)
        XCTAssertEqual(decision.reason, reason, decision.detail, file: file, line: line)
    }

    func testValidAttestationProducesTheKeyRecord() throws {
        let m = try minted()
        let decision = try m.verify()
        let key = try XCTUnwrap(decision.attestedKey, "\(decision.reason?.rawValue ?? "") \(decision.detail)")
        XCTAssertEqual(key.keyId, m.keyId)
        XCTAssertEqual(key.publicKeyPoint, m.deviceKey.publicKeyPoint)
        XCTAssertEqual(key.environment, .development)
        XCTAssertEqual(key.appId, MintedAttestation.appId)
        XCTAssertEqual(key.counter, 0)
        XCTAssertEqual(key.receipt, Array("test-receipt".utf8))
        XCTAssertEqual(key.receiptVerification?.failure, .receiptMalformed)
        XCTAssertNil(key.signals)
        for check: VerificationCheck in [.cborDecodes, .fmt, .chain, .nonce, .keyId, .rpIdHash, .counterZero, .aaguid, .credentialId, .coseKeyMatchesLeaf] {
            XCTAssertEqual(decision.trace[check], true, check.rawValue)
        }
        XCTAssertEqual(decision.trace[.receiptSignature], false)
        // The challenge convenience hashes the challenge (MintedAttestation uses SHA256("challenge")).
        let verifier = AttestationVerifier(trust: try Self.ca.trust, apps: [AppPolicy(appId: MintedAttestation.appId, environment: .any)])
        XCTAssertTrue(verifier.verify(attestationObject: try m.build(), keyId: m.keyId, challenge: Array("challenge".utf8),
                                      now: MintedAttestation.validationTime).isAccepted)
        XCTAssertEqual(verifier.verify(attestationObject: try m.build(), keyId: m.keyId, challenge: Array("other".utf8),
                                       now: MintedAttestation.validationTime).reason, .nonceMismatch)
    }

    func testChainFailures() throws {
        let m = try minted()
        // Apple's anchors only: the test root is not trusted.
        let appleOnly = AttestationVerifier(apps: [AppPolicy(appId: MintedAttestation.appId, environment: .any)])
        assertRejected(appleOnly.verify(attestationObject: try m.build(), keyId: m.keyId, clientDataHash: m.clientDataHash,
                                        now: MintedAttestation.validationTime), .chainInvalid)
        // An attacker's CA, with the same names, that is not pinned.
        let attacker = try TestCA()
        let forged = try MintedAttestation(ca: attacker)
        let forgedObject = try forged.build()
        assertRejected(try m.verify(forgedObject, keyId: forged.keyId), .chainInvalid)
        // Attacker root smuggled into x5c as a third certificate, or as the intermediate.
        let forgedLeaf = try forged.leaf()
        assertRejected(try m.verify(try forged.object(x5c: [forgedLeaf.derBytes, attacker.intermediate.derBytes, attacker.root.derBytes]).encoded,
                                    keyId: forged.keyId), .x5cLength)
        assertRejected(try m.verify(try forged.object(x5c: [forgedLeaf.derBytes, attacker.root.derBytes]).encoded, keyId: forged.keyId), .chainInvalid)
        // x5c of length 1 and 3 (even with genuine certificates).
        let leaf = try m.leaf()
        assertRejected(try m.verify(try m.object(x5c: [leaf.derBytes]).encoded), .x5cLength)
        assertRejected(try m.verify(try m.object(x5c: [leaf.derBytes, Self.ca.intermediate.derBytes, Self.ca.root.derBytes]).encoded), .x5cLength)
        assertRejected(try m.verify(try m.object(x5c: []).encoded), .x5cLength)
        assertRejected(try m.verify(try m.object(x5c: [leaf.derBytes, [0x30, 0x00]]).encoded), .certificateMalformed)
        // Outside the leaf's validity, and at the current time.
        assertRejected(try m.verify(time: 1_700_000_000 - 60), .chainInvalid)
        assertRejected(try m.verify(time: 1_700_000_000 + 4 * 86400), .chainInvalid)
        assertRejected(try m.verify(time: Int64(Date().timeIntervalSince1970)), .chainInvalid)
    }

    func testNonceExtensionFailures() throws {
        var m = try minted()
        let nonce = SHA256.hash(m.authData, m.clientDataHash)
        let variants: [(String, [UInt8]?, ReasonCode)] = [
            ("long-form length", [0x30, 0x25, 0xA1, 0x23, 0x04, 0x81, 0x20] + nonce, .nonceExtensionMalformed),
            ("31 bytes", nonceExtensionDER(Array(nonce.dropLast())), .nonceExtensionMalformed),
            ("33 bytes", nonceExtensionDER(nonce + [0]), .nonceExtensionMalformed),
            ("trailing bytes", nonceExtensionDER(nonce) + [0x05, 0x00], .nonceExtensionMalformed),
            ("missing", nil, .nonceExtensionMalformed),
            ("other nonce", nonceExtensionDER(SHA256.hash(nonce)), .nonceMismatch),
        ]
        for (name, value, reason) in variants {
            m.nonceExtensionOverride = .some(value)
            let decision = try m.verify()
            XCTAssertEqual(decision.reason, reason, name)
            XCTAssertEqual(decision.trace[.nonce], false, name)
            XCTAssertEqual(decision.trace[.chain], true, name)
        }
        // The nonce binds the clientDataHash: a different one fails.
        m.nonceExtensionOverride = nil
        let verifier = AttestationVerifier(trust: try Self.ca.trust, apps: [AppPolicy(appId: MintedAttestation.appId, environment: .any)])
        assertRejected(verifier.verify(attestationObject: try m.build(), keyId: m.keyId, clientDataHash: SHA256.hash(m.clientDataHash),
                                       now: MintedAttestation.validationTime), .nonceMismatch)
        // Two nonce extensions: refused, not resolved by picking one (OpenSSL's non-strict path
        // validation lets the duplicate through; the nonce step refuses it).
        let dup = X509Extension(oid: NonceExtension.oid, isCritical: false, value: nonceExtensionDER(nonce))
        let leaf = try Self.ca.leaf(deviceKey: m.deviceKey, nonceExtension: nonceExtensionDER(nonce), extraExtensions: [dup])
        assertRejected(try m.verify(try m.object(x5c: [leaf.derBytes, Self.ca.intermediate.derBytes]).encoded), .nonceExtensionMalformed)
    }

    func testCBORFailures() throws {
        let m = try minted()
        let object = try m.build()
        assertRejected(try m.verify(object + [0x00]), .cborMalformed)
        assertRejected(try m.verify(Array(object.dropLast())), .cborMalformed)
        // Duplicate key: a second "fmt" entry.
        var duplicate = try m.object(extraTopLevel: [(.text("fmt"), .text("apple-appattest"))]).encoded
        assertRejected(try m.verify(duplicate), .cborMalformed)
        duplicate = []
        assertRejected(try m.verify(TestCBOR.array([]).encoded), .attestationMalformed)
        assertRejected(try m.verify(TestCBOR.map([(.text("fmt"), .text("apple-appattest"))]).encoded), .attestationMalformed)
        var other = m
        other.fmt = "packed"
        assertRejected(try other.verify(), .fmtUnsupported)
        // Unknown extra top-level keys are ignored.
        XCTAssertTrue(try m.verify(try m.object(extraTopLevel: [(.text("future"), .int(1))]).encoded).isAccepted)
    }

    func testAppEnvironmentKeyAndCounterFailures() throws {
        let m = try minted()
        // Wrong environment.
        assertRejected(try m.verify(policy: .production), .envMismatch)
        var production = m
        production.environment = .production
        XCTAssertEqual(try production.verify(policy: .production).attestedKey?.environment, .production)
        XCTAssertTrue(try production.verify(policy: .any).isAccepted)
        assertRejected(try production.verify(policy: .development), .envMismatch)
        // Other App ID, and one of several configured apps.
        assertRejected(try m.verify(apps: [AppPolicy(appId: "ZZZZZZZZZZ.com.example.gateway-test", environment: .any)]), .rpIdMismatch)
        let several = [AppPolicy(appId: "ZZZZZZZZZZ.other", environment: .any), AppPolicy(appId: MintedAttestation.appId, environment: .development)]
        XCTAssertEqual(try m.verify(apps: several).attestedKey?.appId, MintedAttestation.appId)
        // keyId.
        let otherKeyId = SHA256.hash(Array("other".utf8))
        assertRejected(try m.verify(keyId: otherKeyId), .keyIdMismatch)
        // Counter not zero.
        var counted = m
        counted.counter = 1
        assertRejected(try counted.verify(), .counterNotZero)
        // credentialId differs from keyId.
        var credential = m
        credential.credentialIdOverride = SHA256.hash(Array("x".utf8))
        assertRejected(try credential.verify(), .credentialIdMismatch)
        // Unknown aaguid.
        var weird = m
        weird.environment = .development
        let decisionTrace = try weird.verify().trace
        XCTAssertEqual(decisionTrace[.aaguid], true)
    }

    func testIOS27MapOnAttestations() throws {
        var m = try minted()
        m.trailing = ios27Map(category: [1, 0, 0, 0], version: "27.0")
        let decision = try m.verify()
        XCTAssertEqual(decision.attestedKey?.signals, AuthenticatorSignals(validationCategory: [1, 0, 0, 0], bundleVersion: "27.0"), decision.detail)
        m.trailing = ios27Map() + [0x01]
        assertRejected(try m.verify(), .authDataMalformed)
        m.trailing = Array(ios27Map().dropLast())
        assertRejected(try m.verify(), .authDataMalformed)
        m.trailing = [0xFF]
        assertRejected(try m.verify(), .authDataMalformed)
    }

    func testEveryMutationOutsideTheReceiptIsRejected() throws {
        let m = try minted()
        let object = try m.build()
        XCTAssertTrue(try m.verify(object).isAccepted)
        // The receipt entry ("receipt" key and value) is an unauthenticated risk signal: renaming its
        // key only drops it, and its bytes are never a gate. Everything else must matter.
        let receipt = [0x67] + Array("receipt".utf8) + [0x4C] + Array("test-receipt".utf8)
        let receiptStart = try XCTUnwrap(object.firstRange(of: receipt)?.lowerBound)
        var generator = SplitMix64(seed: 42)
        var checked = 0
        for position in 0..<object.count {
            if (receiptStart..<(receiptStart + receipt.count)).contains(position) { continue }
            var mutated = object
            mutated[position] ^= UInt8(1 + generator.next() % 255)
            XCTAssertFalse(try m.verify(mutated).isAccepted, "byte \(position) mutated yet accepted")
            checked += 1
        }
        XCTAssertGreaterThan(checked, 1000)
    }
}
