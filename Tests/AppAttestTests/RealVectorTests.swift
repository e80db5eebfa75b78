@testable import AppAttest
import AttestCrypto
import Foundation
import GatewayRules
import GatewayTestSupport
import XCTest

/// The real device vectors of ../shared/vectors: every file and variant gives its expected results.
final class RealVectorTests: XCTestCase {
    /// Our per-check results for one vector (or variant), under the vectors' check names.
    static func checks(_ v: VectorFixture, now: Int64? = nil) throws -> (accepted: Bool, reason: ReasonCode?, checks: [String: Bool]) {
        switch v.kind {
        case "attestation":
            let env: EnvironmentPolicy = v.string("environment") == "production" ? .production : .development
            let verifier = AttestationVerifier(apps: [AppPolicy(teamId: v.string("teamId") ?? "", bundleId: v.string("bundleId") ?? "", environment: env)])
            let time = try now ?? XCTUnwrap(v.string("validationTime").flatMap(CivilTime.parseISO8601))
            let decision = verifier.verify(attestationObject: try XCTUnwrap(v.bytes("attestationObject")), keyId: try XCTUnwrap(v.bytes("keyId")),
                                           clientDataHash: try XCTUnwrap(v.bytes("clientDataHash")), now: time)
            return (decision.isAccepted, decision.reason, Dictionary(uniqueKeysWithValues: decision.trace.entries.map { ($0.check.rawValue, $0.passed) }))
        case "assertion":
            let key = try P256PublicKey(x963: XCTUnwrap(v.bytes("publicKeyX963")))
            let clientDataHash = try XCTUnwrap(v.bytes("clientDataHash"))
            let previous = UInt32(v.integer("previousCounter") ?? 0)
            let decision = AssertionVerifier.verify(assertionObject: try XCTUnwrap(v.bytes("assertion")), publicKey: key,
                                                    rpIdHash: SHA256.hash(utf8: (v.string("teamId") ?? "") + "." + (v.string("bundleId") ?? "")),
                                                    clientDataHash: clientDataHash, previousCounter: previous)
            var checks = Dictionary(uniqueKeysWithValues: decision.trace.entries.map { ($0.check.rawValue, $0.passed) })
            let object = try CBORDecoder().decode(XCTUnwrap(v.bytes("assertion")))
            let authData = try AuthenticatorData(XCTUnwrap(object["authenticatorData"]?.bytesValue), kind: .assertion)
            checks["counter_matches_expected"] = Int64(authData.counter) == v.integer("expectedCounter")
            checks["publicKey_matches_keyId"] = try SHA256.hash(key.x963Representation) == XCTUnwrap(v.bytes("keyId"))
            if let clientData = try v.bytes("clientData") { checks["clientDataHash_is_sha256_of_clientData"] = SHA256.hash(clientData) == clientDataHash }
            return (decision.isAccepted, decision.reason, checks)
        case "receipt":
            let result = ReceiptVerifier().verify(try XCTUnwrap(v.bytes("receipt")))
            let checks = [
                "signature": result.signatureValid, "signer_chain": result.signerChainValid,
                "app_id": result.receipt?.appId == (v.string("teamId") ?? "") + "." + (v.string("bundleId") ?? ""),
                "attested_key_matches_keyId": try result.receipt?.attestedKeyId == XCTUnwrap(v.bytes("keyId")),
                "receipt_type": result.receipt?.type == v.string("expectedType"),
            ]
            // The decision is the verifier's (signature and signer chain); the other checks are the test's.
            return (result.failure == nil && result.receipt != nil, result.failure, checks)
        default:
            throw SetupFailure("unknown vector kind \(v.kind) in \(v.id)")
        }
    }

    /// Every file and variant: each expected check equals ours, every check name is known, and the
    /// decision (accepted, reason) is the one the expected checks call for (`VectorDecision`).
    func assertMatches(_ vectors: [VectorFixture], count: Int, variants: Int,
                       file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(vectors.count, count, file: file, line: line)
        var compared = 0
        var decisions = 0
        var rejected = 0
        for vector in vectors {
            let result = try Self.checks(vector)
            XCTAssertFalse(vector.expected.isEmpty, vector.id, file: file, line: line)
            VectorDecision.assertKnown(vector.expected.keys, kind: vector.kind, vector.id, file: file, line: line)
            for (check, want) in vector.expected {
                XCTAssertEqual(result.checks[check], want, "\(vector.id) \(check)", file: file, line: line)
                compared += 1
            }
            VectorDecision.assertDecision(accepted: result.accepted, reason: result.reason, verdicts: vector.expected,
                                          kind: vector.kind, vector.id, file: file, line: line)
            decisions += 1
            let raw = vector.fields["variants"] as? [Any] ?? []
            XCTAssertEqual(vector.variants.count, raw.count, "\(vector.id): every variant read", file: file, line: line)
            for variant in vector.variants {
                let label = "\(vector.id) variant \(variant.name)"
                let v = try Self.checks(variant.vector)
                XCTAssertFalse(variant.expected.isEmpty, label, file: file, line: line)
                VectorDecision.assertKnown(variant.expected.keys, kind: vector.kind, label, file: file, line: line)
                for (check, want) in variant.expected {
                    XCTAssertEqual(v.checks[check], want, "\(label) \(check)", file: file, line: line)
                    compared += 1
                }
                VectorDecision.assertDecision(accepted: v.accepted, reason: v.reason, verdicts: variant.expected,
                                              kind: vector.kind, label, file: file, line: line)
                decisions += 1
                if !v.accepted { rejected += 1 }
            }
        }
        XCTAssertGreaterThan(compared, count * 5, file: file, line: line)
        XCTAssertEqual(decisions, count + variants, "every file and every variant decided", file: file, line: line)
        if vectors.first?.kind != "receipt" {
            XCTAssertGreaterThan(rejected, count, "the variants are negative cases: most must be rejected", file: file, line: line)
        }
    }

    func testAll49AttestationsAndVariants() throws {
        let vectors = try VectorFixture.all(kind: "attestation")
        try assertMatches(vectors, count: 49, variants: 335)
        // The decision itself: every attestation is accepted at its validationTime, keyed as the file says.
        for vector in vectors {
            let result = try Self.checks(vector)
            XCTAssertTrue(result.accepted, "\(vector.id): \(String(describing: result.reason))")
        }
    }

    func testEveryRealAttestationChainFailsNow() throws {
        let now = Int64(Date().timeIntervalSince1970)
        for vector in try VectorFixture.all(kind: "attestation") {
            let result = try Self.checks(vector, now: now)
            XCTAssertEqual(result.checks["chain"], false, vector.id)
            XCTAssertEqual(result.reason, .chainInvalid, vector.id)
            XCTAssertEqual(result.checks["nonce"], true, vector.id)
        }
    }

    func testAll29AssertionsAndVariants() throws {
        let vectors = try VectorFixture.all(kind: "assertion")
        try assertMatches(vectors, count: 29, variants: 87)
        for vector in vectors {
            XCTAssertTrue(try Self.checks(vector).accepted, vector.id)
            // Treating the nonce as a prehashed digest rejects every real assertion.
            let key = try P256PublicKey(x963: XCTUnwrap(vector.bytes("publicKeyX963")))
            let object = try CBORDecoder().decode(XCTUnwrap(vector.bytes("assertion")))
            let nonce = SHA256.hash(try XCTUnwrap(object["authenticatorData"]?.bytesValue), try XCTUnwrap(vector.bytes("clientDataHash")))
            let signature = try XCTUnwrap(object["signature"]?.bytesValue)
            XCTAssertEqual(key.verify(signature: signature, digest: nonce), .invalid, vector.id)
            XCTAssertEqual(key.verify(signature: signature, message: nonce), .valid, vector.id)
        }
    }

    func testAll4ReceiptsAndVariants() throws {
        let vectors = try VectorFixture.all(kind: "receipt")
        try assertMatches(vectors, count: 4, variants: 4)
        for vector in vectors {
            let result = ReceiptVerifier().verify(try XCTUnwrap(vector.bytes("receipt")))
            let receipt = try XCTUnwrap(result.receipt)
            let decoded = vector.fields["decodedFields"] as? [String: Any] ?? [:]
            XCTAssertEqual(receipt.type, decoded["receipt_type"] as? String)
            XCTAssertEqual(receipt.environment, decoded["environment"] as? String)
            XCTAssertEqual(receipt.token, decoded["token"] as? String)
            XCTAssertEqual(receipt.creationTimeText, decoded["creation_time"] as? String)
            XCTAssertEqual(receipt.riskMetric.map(String.init), decoded["risk_metric"] as? String)
            XCTAssertEqual(receipt.fieldTypes, vector.fields["fieldTypesPresent"] as? [Int])
            XCTAssertEqual(receipt.expirationTime, (decoded["expiration_time"] as? String).flatMap(CivilTime.parseISO8601))
            XCTAssertEqual(receipt.notBefore, (decoded["not_before"] as? String).flatMap(CivilTime.parseISO8601))
            XCTAssertEqual(receipt.clientHash, (decoded["client_hash"] as? String).flatMap(Base64.decode))
            // Without the pinned G3 root nothing chains.
            let unpinned = ReceiptVerifier(trust: try TrustAnchors(appAttestRoots: [], receiptRoots: []))
            XCTAssertFalse(unpinned.verify(try XCTUnwrap(vector.bytes("receipt"))).signerChainValid)
        }
    }

    func testReceiptsInsideAttestations() throws {
        var quirk = 0
        for vector in try VectorFixture.all(kind: "attestation") {
            let object = try AttestationObject(XCTUnwrap(vector.bytes("attestationObject")))
            let result = ReceiptVerifier().verify(try XCTUnwrap(object.receipt))
            let summary = vector.fields["receipt"] as? [String: Any] ?? [:]
            XCTAssertEqual(result.signedAttributesPresent, summary["signedAttributesPresent"] as? Bool, vector.id)
            XCTAssertEqual(result.receipt?.type, "ATTEST")
            XCTAssertEqual(result.receipt?.attestedKeyId, try vector.bytes("keyId"), vector.id)
            if result.signedAttributesPresent && result.signatureValid {
                XCTAssertEqual(result.signedContent, .eContent, "2020 quirk: signature over the eContent")
                quirk += 1
            }
            // A flipped byte in the eContent breaks the signature (messageDigest or signature).
            var tampered = try XCTUnwrap(object.receipt)
            if let range = tampered.firstRange(of: Array("ATTEST".utf8)) {
                tampered[range.lowerBound] = UInt8(ascii: "B")
                XCTAssertFalse(ReceiptVerifier().verify(tampered).signatureValid, vector.id)
            }
        }
        XCTAssertEqual(quirk, 8)
    }

    /// A real attestation keeps its own receipt (it names this key, app and client hash); the same
    /// attestation carrying another device's real receipt is still accepted (the receipt is a risk
    /// signal, not a gate) but the foreign receipt is neither kept nor reported valid
    /// (`receipt_not_bound`): stored, it would become this key's risk metric and be sent to Apple.
    func testAReceiptIsKeptOnlyWhenItIsThisAttestations() throws {
        let vectors = try VectorFixture.all(kind: "attestation").filter { $0.expected.allSatisfy { $0.value } }
        XCTAssertGreaterThan(vectors.count, 2)
        var swaps = 0
        func header(_ count: Int) -> [UInt8] { count < 256 ? [0x58, UInt8(count)] : [0x59, UInt8(count >> 8), UInt8(count & 0xFF)] }
        func verify(_ v: VectorFixture, _ object: [UInt8]) throws -> AttestedKey? {
            let env: EnvironmentPolicy = v.string("environment") == "production" ? .production : .development
            let verifier = AttestationVerifier(apps: [AppPolicy(teamId: v.string("teamId") ?? "", bundleId: v.string("bundleId") ?? "", environment: env)])
            let time = try XCTUnwrap(v.string("validationTime").flatMap(CivilTime.parseISO8601))
            return verifier.verify(attestationObject: object, keyId: try XCTUnwrap(v.bytes("keyId")),
                                   clientDataHash: try XCTUnwrap(v.bytes("clientDataHash")), now: time).attestedKey
        }
        for (index, vector) in vectors.enumerated() {
            let bytes = try XCTUnwrap(vector.bytes("attestationObject"))
            let own = try XCTUnwrap(AttestationObject(bytes).receipt)
            let key = try XCTUnwrap(try verify(vector, bytes), vector.id)
            XCTAssertEqual(key.receipt, own, "\(vector.id): its own receipt is kept")
            XCTAssertNotEqual(key.receiptVerification?.failure, .receiptNotBound, vector.id)
            // Another device's receipt (the next vector with a different key) in its place.
            let other = vectors[(index + 1) % vectors.count]
            let foreign = try XCTUnwrap(AttestationObject(XCTUnwrap(other.bytes("attestationObject"))).receipt)
            guard foreign != own, let at = bytes.firstRange(of: header(own.count) + own) else { continue }
            var swapped = bytes
            swapped.replaceSubrange(at, with: header(foreign.count) + foreign)
            let accepted = try XCTUnwrap(try verify(vector, swapped), "\(vector.id): the receipt is no gate")
            XCTAssertNil(accepted.receipt, "\(vector.id): a foreign receipt is not kept")
            XCTAssertEqual(accepted.receiptVerification?.failure, .receiptNotBound, vector.id)
            XCTAssertEqual(accepted.receiptVerification?.isValid, false, vector.id)
            swaps += 1
        }
        XCTAssertGreaterThan(swaps, vectors.count / 2, "the foreign receipts went in")
    }

    func testEmbeddedAppleRoots() throws {
        XCTAssertEqual(hex(AppleRootCertificates.appAttestRootCA.sha256Fingerprint), "1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932")
        XCTAssertEqual(hex(AppleRootCertificates.rootCAG3.sha256Fingerprint), "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        XCTAssertEqual(AppleRootCertificates.appAttestRootCA.subjectCommonName, "Apple App Attestation Root CA")
        XCTAssertEqual(AppleRootCertificates.rootCAG3.subjectCommonName, "Apple Root CA - G3")
        guard let dir = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let shared = try X509Certificate(pem: String(contentsOf: dir.appendingPathComponent("apple-app-attest-root-ca.pem"), encoding: .utf8))
        XCTAssertEqual(shared.derBytes, AppleRootCertificates.appAttestRootCA.derBytes)
    }

    /// One verifier (shared X509 stores) used from many threads at once gives the same answers.
    func testConcurrentVerification() throws {
        let vectors = try VectorFixture.all(kind: "attestation")
        let verifier = AttestationVerifier(apps: vectors.map { AppPolicy(teamId: $0.string("teamId") ?? "", bundleId: $0.string("bundleId") ?? "", environment: .any) })
        let inputs = try vectors.map { v in
            (try XCTUnwrap(v.bytes("attestationObject")), try XCTUnwrap(v.bytes("keyId")), try XCTUnwrap(v.bytes("clientDataHash")),
             try XCTUnwrap(v.string("validationTime").flatMap(CivilTime.parseISO8601)))
        }
        let accepted = Counter()
        DispatchQueue.concurrentPerform(iterations: inputs.count * 4) { i in
            let (object, keyId, hash, time) = inputs[i % inputs.count]
            if verifier.verify(attestationObject: object, keyId: keyId, clientDataHash: hash, now: time).isAccepted { accepted.increment() }
        }
        XCTAssertEqual(accepted.value, inputs.count * 4)
    }
}

final class Counter: @unchecked Sendable {  // guarded by `lock`
    private let lock = NSLock()
    private var count = 0
    func increment() { lock.lock(); count += 1; lock.unlock() }
    var value: Int { lock.lock(); defer { lock.unlock() }; return count }
}
