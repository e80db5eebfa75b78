import GatewayStore

/// The refusals of the key lifecycle endpoints (`POST {prefix}/renew`, `POST {prefix}/forget`) and
/// of keys per account (issue 10, DESIGN.md section 8).
extension Refusal {
    /// 400: the body carries the wrong proof for this key: App Attest keys prove with `assertion`,
    /// device keys with `signature`.
    static func proofMismatch(expected: String) -> Refusal {
        Refusal(status: 400, code: "proof_mismatch", action: .deny,
                detail: "this key proves possession with \"\(expected)\" (App Attest keys: assertion; device keys: signature)")
    }

    /// 400: the body has both `signature` and `assertion`, or neither.
    static let proofMissing = Refusal(status: 400, code: "json_invalid", action: .deny,
                                      detail: "give exactly one of \"signature\" (device key) or \"assertion\" (App Attest key)")

    /// 400: the account header is empty or appears more than once.
    static func accountInvalid(_ header: String) -> Refusal {
        Refusal(status: 400, code: "account_invalid", action: .deny, detail: "\(header) must appear at most once and not be empty")
    }
}
