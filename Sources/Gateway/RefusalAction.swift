/// What a client should do after a refusal: the `action` field of every refusal body
/// (DESIGN.md section 2).
public enum RefusalAction: String, Sendable {
    /// Transient condition (dependency down, timeout, rate limit): try the same thing again later.
    case retry
    /// The challenge was unknown, expired, used or for another purpose: get a fresh challenge
    /// (one is included in the answer when the request carried a keyId) and sign again.
    case refreshChallenge = "refresh_challenge"
    /// The gateway does not know the key (or no longer trusts it): generate and attest a new key.
    case reattest
    /// Retrying cannot help: the request or evidence is wrong or refused by policy.
    case deny
}
