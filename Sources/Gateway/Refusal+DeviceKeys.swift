/// The refusals of device keys and trust tiers (DESIGN.md section 8).
extension Refusal {
    /// 403: the key's tier is below the route's `min_tier`; `tier` is the key's, `required` the route's.
    static func tierTooLow(tier: String, required: String) -> Refusal {
        Refusal(status: 403, code: "tier_too_low", action: .deny,
                detail: "this route takes keys of tier \(required); this key is \(tier) (register it with an App Attest attestation or assertion)")
    }

    /// 403: a registration refused by policy or by its App Attest evidence. With `retryAt` (unix
    /// seconds, also as `Retry-After`) when it spent an App Attest attestation: the client waits
    /// before spending another (one hour, doubling per refusal in a row, seven days at most).
    static func registrationRefused(_ why: String, retryAt: Int64?, now: Int64) -> Refusal {
        var refusal = Refusal(status: 403, code: "registration_refused", action: retryAt == nil ? .deny : .retry,
                              detail: "registration refused: \(why)",
                              retryAfter: retryAt.map { Int(clamping: max($0 - now, 1)) })
        refusal.retryAt = retryAt
        return refusal
    }

    /// 401: the evidence kind does not match the key: App Attest keys send `App-Attest-Assertion`,
    /// device keys (registered with `POST {prefix}/register`) send `App-Attest-Signature`.
    static func evidenceKindMismatch(deviceKey: Bool, assertionHeader: String, signatureHeader: String) -> Refusal {
        Refusal(status: 401, code: "evidence_kind_mismatch", action: .deny,
                detail: deviceKey ? "this is a device key: sign the request and send \(signatureHeader)"
                                  : "this is an App Attest key: send \(assertionHeader)")
    }

    /// 400: both an assertion and a device-key signature were sent.
    static func evidenceAmbiguous(assertionHeader: String, signatureHeader: String) -> Refusal {
        Refusal(status: 400, code: "evidence_ambiguous", action: .deny,
                detail: "send either \(assertionHeader) or \(signatureHeader), not both")
    }

    /// 400: the registration names no app and several are configured, or names one that differs
    /// from the app App Attest vouched for.
    static func registrationAppInvalid(_ detail: String) -> Refusal {
        Refusal(status: 400, code: "app_id_invalid", action: .deny, detail: detail)
    }
}
