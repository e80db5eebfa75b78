/// The audit trail of a revocation made with `attestctl keys revoke` (issue 9 "attestctl for
/// operators"), stored in the key record hash next to `status`: `revoked_at` (unix ms),
/// `revoked_reason` and `revoked_by` (the operator), each optional. Records revoked before these
/// fields existed (or through `AttestStore.revokeKey`) have none of them; records never revoked have
/// no revocation at all. Schema version `v` stays `1`: the fields are optional additions.
public struct KeyRevocation: Sendable, Equatable {
    /// When, unix milliseconds.
    public var at: Int64?
    /// Why (free text, at most 256 bytes).
    public var reason: String?
    /// Who (free text, at most 256 bytes).
    public var revokedBy: String?

    /// A revocation record.
    public init(at: Int64?, reason: String?, revokedBy: String?) {
        self.at = at
        self.reason = reason
        self.revokedBy = revokedBy
    }
}

/// The outcome of `RedisStore.revokeKey(_:reason:revokedBy:now:completion:)`.
public enum KeyRevocationOutcome: Sendable, Equatable {
    /// The key was active and is now revoked, with the audit fields written.
    case revoked
    /// The key was revoked before: nothing changed (the first revocation's fields stay).
    case alreadyRevoked
    /// No such key record.
    case notFound
}
