import AppAttest
import Foundation
import XCTest

/// The decision a vector (or variant) of ../shared/vectors calls for, derived from its per-check
/// verdicts (`expected`, or ref_verify.py's `results`): accepted exactly when every *decisive* check
/// listed is true; when rejected, the reason must be one that a failing decisive check explains.
///
/// Comparing only per-check traces let a verifier that accepts despite a failing check (rpIdHash,
/// nonce) pass every vector; tests assert this decision as well (issue 14).
enum VectorDecision {
    /// Every check name a vector of `kind` may carry (shared/vectors/README.md "Checks and expected
    /// verdicts"); any other name fails the test (a vector set that grew a check we do not compute).
    static func knownChecks(_ kind: String) -> Set<String> {
        switch kind {
        case "attestation":
            return ["cbor_decodes", "fmt", "chain", "nonce", "keyId", "rpIdHash", "counter_zero", "aaguid",
                    "credentialId", "cose_key_matches_leaf", "receipt_client_hash_matches", "receipt_signature"]
        case "assertion":
            return ["signature", "rpIdHash", "counter_matches_expected", "counter_greater_than_previous",
                    "publicKey_matches_keyId", "clientDataHash_is_sha256_of_clientData"]
        case "receipt":
            return ["signature", "signer_chain", "app_id", "attested_key_matches_keyId", "receipt_type"]
        default:
            return []
        }
    }

    /// Decisive checks of `kind` and the reasons our verifier may give when each fails. The others are
    /// risk signals (receipt checks inside an attestation) or tooling checks the test computes itself.
    static func decisive(_ kind: String) -> [String: Set<ReasonCode>] {
        switch kind {
        case "attestation":
            return ["cbor_decodes": [.cborMalformed, .attestationMalformed], "fmt": [.fmtUnsupported],
                    "chain": [.chainInvalid, .x5cLength, .certificateMalformed],
                    "nonce": [.nonceMismatch, .nonceExtensionMalformed], "keyId": [.keyIdMismatch],
                    "rpIdHash": [.rpIdMismatch], "counter_zero": [.counterNotZero], "aaguid": [.envMismatch],
                    "credentialId": [.credentialIdMismatch], "cose_key_matches_leaf": [.coseKeyMismatch]]
        case "assertion":
            return ["signature": [.badSignature, .signatureEncoding], "rpIdHash": [.rpIdMismatch],
                    "counter_greater_than_previous": [.counterReplay]]
        case "receipt":
            return ["signature": [.receiptSignatureInvalid], "signer_chain": [.receiptChainInvalid]]
        default:
            return [:]
        }
    }

    /// Fails (at the caller) for every check name not known for `kind`; returns how many were unknown.
    @discardableResult
    static func assertKnown(_ checks: some Sequence<String>, kind: String, _ label: String,
                            file: StaticString = #filePath, line: UInt = #line) -> Int {
        let known = knownChecks(kind)
        XCTAssertFalse(known.isEmpty, "\(label): unknown vector kind \(kind)", file: file, line: line)
        var unknown = 0
        for check in checks where !known.contains(check) {
            XCTFail("\(label): unknown check name \(check) for kind \(kind)", file: file, line: line)
            unknown += 1
        }
        return unknown
    }

    /// Asserts that (`accepted`, `reason`) is the decision `verdicts` call for.
    static func assertDecision(accepted: Bool, reason: ReasonCode?, verdicts: [String: Bool], kind: String, _ label: String,
                               file: StaticString = #filePath, line: UInt = #line) {
        let decisive = decisive(kind)
        let failing = verdicts.filter { !$0.value && decisive[$0.key] != nil }.map(\.key).sorted()
        if failing.isEmpty {
            XCTAssertTrue(accepted, "\(label): every decisive check passes, so it must be accepted (reason \(reason.map(\.rawValue) ?? "-"))",
                          file: file, line: line)
            XCTAssertNil(reason, "\(label): accepted without a reason", file: file, line: line)
        } else {
            XCTAssertFalse(accepted, "\(label): \(failing.joined(separator: ", ")) fail, so it must be rejected", file: file, line: line)
            let allowed = failing.reduce(into: Set<ReasonCode>()) { $0.formUnion(decisive[$1] ?? []) }
            XCTAssertTrue(reason.map(allowed.contains) ?? false,
                          "\(label): reason \(reason.map(\.rawValue) ?? "none") does not explain \(failing); expected one of \(allowed.map(\.rawValue).sorted())",
                          file: file, line: line)
        }
    }
}
