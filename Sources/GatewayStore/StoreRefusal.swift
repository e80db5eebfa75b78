/// Why a store operation refused to change state: a verdict about the request's evidence, never an
/// infrastructure problem (that is `StoreUnavailable`). The raw value is the stable reason code of
/// DESIGN.md section 2. On every refusal nothing was changed in the store.
public enum StoreRefusal: String, Error, Sendable, CaseIterable {
    /// No such challenge under this keyId (never issued, already consumed, issued for another key, or
    /// purged after its grace period). HTTP 401, action `refresh_challenge`.
    case challengeUnknown = "challenge_unknown"
    /// The challenge exists but `now >= expiresAt`. HTTP 401, action `refresh_challenge`.
    case challengeExpired = "challenge_expired"
    /// The challenge was issued for the other purpose (attest vs assert). HTTP 401, `refresh_challenge`.
    case challengeWrongPurpose = "challenge_wrong_purpose"
    /// No key record for this keyId. HTTP 401, action `reattest`.
    case keyUnknown = "key_unknown"
    /// The key was revoked. HTTP 403, action `deny`.
    case keyRevoked = "key_revoked"
    /// The key's registration expired (`now >= expiresAt`). HTTP 401, action `reattest`.
    case keyExpired = "key_expired"
    /// `registerKey` for a keyId that is already registered: the existing record (counter included) and
    /// the challenge are left untouched. HTTP 401/409 at the gateway's choice, action `reattest`.
    case keyExists = "key_exists"
    /// The assertion counter is not above the highest accepted one and not a fresh counter inside the
    /// route's anti-replay window. HTTP 401, action `refresh_challenge`.
    case counterReplay = "counter_replay"

    /// The stable reason code (same as `rawValue`).
    public var code: String { rawValue }

    /// The key can never pass again (unknown, revoked, expired): a gateway drops it from its key
    /// cache, so that its next challenge request asks the store and is refused there.
    public var keyIsGone: Bool { self == .keyUnknown || self == .keyRevoked || self == .keyExpired }
}
