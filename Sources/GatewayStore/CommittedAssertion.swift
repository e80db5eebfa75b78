/// What `commitAssertion` returns when it accepted an assertion: the highest counter stored after the
/// commit and the key's fraud metric (`RiskSnapshot`). Nothing else: every other fact the gateway needs about the key (public key, app,
/// environment, tier) is fixed at attestation for a keyId (keyId = SHA-256 of the public key) and
/// cached by the gateway, and the key's status and expiry are checked inside the commit itself
/// (a revoked or expired key is refused), so answering them again would cost the store work per
/// request for values no caller reads (DESIGN.md section 4: one store round trip per request).
public struct CommittedAssertion: Equatable, Sendable {
    /// The highest counter stored after this commit (equals the committed counter unless it was
    /// accepted out of order inside the anti-replay window).
    public let counter: UInt32
    /// The key's fraud metric, read by the same script (issue 12: the metric changes when the
    /// receipt refresher replaces the receipt, so it cannot be cached with the key's fixed facts).
    public let risk: RiskSnapshot

    /// Memberwise initialiser (used by store implementations).
    public init(counter: UInt32, risk: RiskSnapshot = RiskSnapshot(metric: nil, observedAt: nil, state: nil)) {
        self.counter = counter
        self.risk = risk
    }
}
