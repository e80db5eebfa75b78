import Foundation

/// What became of a `ProtectedRequest` after the SDK signed it and followed the gateway's `action`s.
public struct ProtectedResponse: Sendable {
    /// How the request ended, from the app's point of view.
    public enum Verdict: String, Sendable, Equatable {
        /// The gateway forwarded it; `status` and `body` are the upstream's.
        case accepted
        /// The gateway refused it after the SDK did what `action` asked (`error` says why). For
        /// `deny`, show an error; for anything else, try again later.
        case refused
        /// No answer (network) or `503` after every retry, or a `Retry-After` longer than
        /// `retryMaxDelay` (see `retryAfter`): try again later; nothing is wrong with the key.
        case unavailable
        /// The install has no passed attestation (`detail` from `Attestation`); the request was not sent.
        case notAttested
    }

    /// The final HTTP status (0 when nothing answered).
    public var status: Int
    /// The final answer's header fields.
    public var headers: [(name: String, value: String)]
    /// The final answer's body.
    public var body: Data
    /// See `Verdict`.
    public var verdict: Verdict
    /// The gateway's refusal code (`App-Attest-Error`), when refused.
    public var error: String?
    /// The refusal's `action` (`retry`, `refresh_challenge`, `reattest`, `deny`), when refused.
    public var action: String?
    /// HTTP exchanges this request cost, challenges and retries included (1 in the steady state
    /// when the gateway sends next challenges).
    public var roundTrips: Int
    /// One sentence when not accepted.
    public var detail: String?
    /// Seconds the gateway asked to wait (`Retry-After`) when that was longer than
    /// `AttestClientConfiguration.retryMaxDelay`, so the SDK did not wait and answered `.unavailable`
    /// at once: the app decides when to try again. nil otherwise.
    public var retryAfter: Double?

    /// Creates a response.
    public init(status: Int, headers: [(name: String, value: String)] = [], body: Data = Data(), verdict: Verdict,
                error: String? = nil, action: String? = nil, roundTrips: Int, detail: String? = nil, retryAfter: Double? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.verdict = verdict
        self.error = error
        self.action = action
        self.roundTrips = roundTrips
        self.detail = detail
        self.retryAfter = retryAfter
    }

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}
