/// The challenge a commit stores for the client's next protected request (DESIGN.md section 9,
/// "Next challenge"; issue 11 "One round trip"): purpose `assert`, bound to the commit's keyId,
/// valid while `now < expiresAt`, kept for the store's grace period after that like any challenge.
public struct NextChallenge: Sendable, Equatable {
    /// The fresh challenge value (random bytes minted by the gateway).
    public let challenge: Challenge
    /// Expiry, unix ms; the lifetime `expiresAt - now` is clamped as in `AttestStore.issueChallenge`.
    public let expiresAt: UnixMillis

    /// Wraps a minted challenge and its expiry (unix ms).
    public init(challenge: Challenge, expiresAt: UnixMillis) {
        self.challenge = challenge
        self.expiresAt = expiresAt
    }
}
