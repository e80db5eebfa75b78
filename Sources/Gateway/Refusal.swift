import AppAttest
import GatewayRules

/// A refusal the gateway answers instead of forwarding (DESIGN.md section 2, "Answers").
///
/// Rendered as JSON `{"error": code, "action": action, "detail": text}` plus the header
/// `App-Attest-Error: code`; a `503`/`429` also carries `Retry-After` (seconds). A refusal caused by
/// the challenge may carry a fresh challenge for the request's keyId (`challenge`, `expiresAt`).
public struct Refusal: Sendable, Equatable {
    /// HTTP status: 400 malformed, 401 evidence missing/invalid/stale/replayed, 403 policy,
    /// 404 no route, 409 key already attested, 408/413/429/431, 502/504 upstream, 503 dependency down.
    public var status: Int
    /// Stable snake_case reason code (e.g. `challenge_expired`, `store_unavailable`).
    public var code: String
    /// What the client should do next.
    public var action: RefusalAction
    /// One human-readable sentence for operators and client developers (never secrets).
    public var detail: String
    /// Seconds for `Retry-After`, when the client should retry later.
    public var retryAfter: Int?
    /// A fresh challenge (raw bytes) and its expiry (unix seconds) for challenge failures.
    public var freshChallenge: (bytes: [UInt8], expiresAt: Int64)?
    /// When the client may spend another App Attest attestation (unix seconds; field `retryAt` of
    /// `registration_refused`, DESIGN.md section 8).
    public var retryAt: Int64?

    /// Creates a refusal.
    public init(status: Int, code: String, action: RefusalAction, detail: String, retryAfter: Int? = nil) {
        self.status = status
        self.code = code
        self.action = action
        self.detail = detail
        self.retryAfter = retryAfter
        self.freshChallenge = nil
        self.retryAt = nil
    }

    public static func == (lhs: Refusal, rhs: Refusal) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.action == rhs.action
            && lhs.detail == rhs.detail && lhs.retryAfter == rhs.retryAfter
            && lhs.freshChallenge?.bytes == rhs.freshChallenge?.bytes
            && lhs.freshChallenge?.expiresAt == rhs.freshChallenge?.expiresAt && lhs.retryAt == rhs.retryAt
    }

    /// The JSON body, UTF-8.
    public var jsonBody: [UInt8] {
        var json = JSONWriter()
        json.beginObject()
        json.field("error", code)
        json.field("action", action.rawValue)
        json.field("detail", detail)
        if let fresh = freshChallenge {
            json.field("challenge", Base64.encode(fresh.bytes))
            json.field("expiresAt", fresh.expiresAt)
        }
        if let retryAt { json.field("retryAt", retryAt) }
        json.endObject()
        return json.bytes
    }
}
