/// The key set of generated verdict-signing keys and its rotation schedule (issue 12): a value-type
/// state machine with the time passed in (unix milliseconds), so the schedule is tested without a
/// clock or sleeps. The same value is what the fleet shares in the store (`encoded()`).
///
/// Schedule (`Policy`: rotation period `P`, publication lead `L`, token lifetime `T`, clock skew `S`):
/// - An empty set gets a key that signs at once (nobody can hold a token of an older one).
/// - When the newest key `k` has signed since `a_k` and `now >= a_k + P - L`, the next key is added,
///   published from now, signing from `max(a_k + P, now + L)`: always at least `L` after it first
///   appears in the JWKS.
/// - The key that signs at `t` is the one with the latest activation `<= t` (`signingKey(at:)`);
///   keys activating later are only published.
/// - A key superseded at `a_next` is kept (published) until `a_next + T + S`: its last token has
///   expired; then it is dropped.
///
/// Thread-safety: a value.
struct VerdictKeyRotation: Sendable, Equatable {
    /// The schedule's durations, milliseconds.
    struct Policy: Sendable, Equatable {
        /// `P`: how long a key signs.
        var rotation: Int64
        /// `L`: how long the next key is published before it signs.
        var publishAhead: Int64
        /// `T`: lifetime of a token (`exp - iat`).
        var tokenLifetime: Int64
        /// `S`: allowance for clocks that disagree (replicas, upstreams).
        var skew: Int64 = 60_000
    }

    /// One key of the set.
    struct Entry: Sendable, Equatable {
        /// JWK thumbprint of the key.
        var kid: String
        /// The private key, DER PKCS#8.
        var material: [UInt8]
        /// When it was added (published from then on).
        var publishedAt: Int64
        /// When it starts signing.
        var activatesAt: Int64
    }

    /// What `advance` did.
    struct Change: Sendable, Equatable {
        /// A key was added (its kid).
        var added: String?
        /// Keys dropped (their tokens have all expired).
        var removed: [String] = []
        /// Whether anything changed.
        var isEmpty: Bool { added == nil && removed.isEmpty }
    }

    /// Keys in activation order (oldest first).
    private(set) var entries: [Entry]

    /// A set holding `entries` (sorted by activation here).
    init(entries: [Entry] = []) {
        self.entries = entries.sorted { $0.activatesAt < $1.activatesAt }
    }

    /// The key that signs at `now`: the latest activation at or before it; nil when none has
    /// activated yet (an empty set).
    func signingKey(at now: Int64) -> Entry? {
        entries.last { $0.activatesAt <= now }
    }

    /// When the set next needs `advance` (a key to add or to drop), for timers; nil when empty.
    func nextChange(policy: Policy) -> Int64? {
        guard let newest = entries.last else { return nil }
        var next = newest.activatesAt + policy.rotation - policy.publishAhead
        for index in entries.indices.dropLast() {
            next = min(next, entries[index + 1].activatesAt + policy.tokenLifetime + policy.skew)
        }
        return next
    }

    /// Brings the set up to date at `now`: adds the next key when its publication is due (made by
    /// `makeKey`: kid and PKCS#8 DER), drops keys whose last token has expired. Idempotent: a second
    /// call at the same time changes nothing.
    /// - Throws: what `makeKey` throws (nothing changed then).
    @discardableResult
    mutating func advance(now: Int64, policy: Policy, makeKey: () throws -> (kid: String, material: [UInt8])) rethrows -> Change {
        var change = Change()
        if let newest = entries.last {
            if now >= newest.activatesAt + policy.rotation - policy.publishAhead && newest.activatesAt <= now {
                let key = try makeKey()
                let activatesAt = max(newest.activatesAt + policy.rotation, now + policy.publishAhead)
                entries.append(Entry(kid: key.kid, material: key.material, publishedAt: now, activatesAt: activatesAt))
                change.added = key.kid
            }
        } else {
            let key = try makeKey()
            entries.append(Entry(kid: key.kid, material: key.material, publishedAt: now, activatesAt: now))
            change.added = key.kid
        }
        // Drop keys superseded long enough ago: the successor activated, plus a token's lifetime and skew.
        var kept: [Entry] = []
        for (index, entry) in entries.enumerated() {
            if index + 1 < entries.count, entries[index + 1].activatesAt + policy.tokenLifetime + policy.skew <= now {
                change.removed.append(entry.kid)
            } else {
                kept.append(entry)
            }
        }
        entries = kept
        return change
    }
}
