/// The result of `AttestClient.attest()`: whether the gateway accepted this install's key, and what it
/// said about it (DESIGN.md section 8, the `201` answer of `POST {prefix}/register`).
///
/// A value type, `Codable` so that a passed result survives relaunches (`AttestationStore`).
public struct Attestation: Sendable, Equatable, Codable, CustomStringConvertible {
    /// The outcome of one attestation attempt.
    public enum Verdict: String, Sendable, Equatable, Codable {
        /// The gateway accepted this install's key; protected requests can be signed.
        case passed
        /// The gateway refused, could not be reached, or App Attest refused; `detail` says why.
        case failed
        /// No key could be created on this device (or the gateway accepts none the device can make).
        case unsupported
    }

    /// Whether a key could be created on this device.
    public var supported: Bool
    /// `.passed`, `.failed` or `.unsupported`.
    public var verdict: Verdict
    /// Whether an App Attest token went up with the key and the gateway accepted it (Apple vouched
    /// for this app instance). False for device-key registrations (simulator, old devices, App Attest
    /// unavailable or not answering in time).
    public var platformAttested: Bool
    /// Whether this attempt spent one of Apple's App Attest attestations, whatever the result.
    public var platformTokenSpent: Bool
    /// When the registration expires, unix seconds; nil when the gateway gave no expiry.
    public var expiresAt: Int?
    /// The key's identifier as the gateway names it: standard base64 of the 32-byte keyId.
    public var kid: String?
    /// The trust tier the gateway assigned: `attested` or `device` (its word: a registration passes
    /// only on the gateway's `201` naming `kid`, `tier` and `platformAttested`).
    public var tier: String?
    /// The integrity codes the gateway recorded for this device (comma-separated), when any.
    public var integrity: String?
    /// Where the signing key is kept: `secure_enclave` or `software` (`app_attest` when requests are
    /// signed with App Attest assertions, on a gateway without device-key registrations).
    public var backing: String?
    /// Why attestation did not pass, when it did not (one sentence, never secrets); on a passed result,
    /// why App Attest was not used (e.g. `App Attest is not supported on this device`), or why a renewal
    /// failed while the previous result was kept.
    public var detail: String?
    /// When the gateway asks for a renewal (unix seconds); nil when it gave none.
    public var renewAfter: Int?

    /// Creates a result; every field but `verdict` and `supported` defaults to "absent".
    public init(supported: Bool, verdict: Verdict, platformAttested: Bool = false, platformTokenSpent: Bool = false,
                expiresAt: Int? = nil, kid: String? = nil, tier: String? = nil, integrity: String? = nil,
                backing: String? = nil, detail: String? = nil, renewAfter: Int? = nil) {
        self.supported = supported
        self.verdict = verdict
        self.platformAttested = platformAttested
        self.platformTokenSpent = platformTokenSpent
        self.expiresAt = expiresAt
        self.kid = kid
        self.tier = tier
        self.integrity = integrity
        self.backing = backing
        self.detail = detail
        self.renewAfter = renewAfter
    }

    /// A `.failed` result with `detail`.
    static func failed(_ detail: String, tokenSpent: Bool = false, backing: String? = nil) -> Attestation {
        Attestation(supported: true, verdict: .failed, platformTokenSpent: tokenSpent, backing: backing, detail: detail)
    }

    /// An `.unsupported` result with `detail`.
    static func unsupported(_ detail: String) -> Attestation {
        Attestation(supported: false, verdict: .unsupported, detail: detail)
    }

    /// One line for logs: verdict, tier, kid and detail.
    public var description: String {
        var parts = ["verdict: \(verdict.rawValue)"]
        if let tier { parts.append("tier: \(tier)") }
        parts.append("platformAttested: \(platformAttested)")
        if let kid { parts.append("kid: \(kid)") }
        if let expiresAt { parts.append("expiresAt: \(expiresAt)") }
        if let detail { parts.append("detail: \(detail)") }
        return "Attestation(" + parts.joined(separator: ", ") + ")"
    }
}
