/// What `AttestStore.commitAssertion(keyId:challenge:counter:window:now:issuing:completion:)`
/// answers: the commit's outcome and whether the next challenge was stored with it.
public struct AssertionCommit: Sendable, Equatable {
    /// The commit itself, exactly as `commitAssertion` without a next challenge would answer it.
    public let outcome: StoreOutcome<CommittedAssertion>
    /// Whether the next challenge is now pending under the keyId (purpose `assert`): true when the
    /// key exists, is active and unexpired, whatever the commit's outcome (`accepted`, or refused for
    /// its challenge or counter), unless the store could not hold one more challenge
    /// (`MemoryStore.Configuration.maximumChallenges`); false for `key_unknown`, `key_revoked` and
    /// `key_expired`.
    public let nextIssued: Bool

    /// Memberwise initialiser (used by store implementations).
    public init(outcome: StoreOutcome<CommittedAssertion>, nextIssued: Bool) {
        self.outcome = outcome
        self.nextIssued = nextIssued
    }

    /// Whether a commit that ended with `outcome` is one after which the next challenge is stored:
    /// accepted, or refused for the presented challenge or counter of an active key.
    public static func issuesNext(after outcome: StoreOutcome<CommittedAssertion>) -> Bool {
        switch outcome {
        case .accepted: return true
        case .refused(let refusal):
            switch refusal {
            case .challengeUnknown, .challengeExpired, .challengeWrongPurpose, .counterReplay: return true
            case .keyUnknown, .keyRevoked, .keyExpired, .keyExists: return false
            }
        }
    }
}
