import AttestCrypto
import GatewayStore

/// Mints one-time challenges and records them in the store (DESIGN.md section 1, "challenge"):
/// `byteCount` random bytes from OpenSSL's CSPRNG, bound to a keyId and a purpose, valid for `ttl`.
struct ChallengeIssuer: Sendable {
    /// The store that keeps challenges.
    let store: any AttestStore
    /// Challenge length in bytes (16...64; default 32).
    let byteCount: Int
    /// Lifetime in milliseconds.
    let ttlMillis: Int64
    /// Time source.
    let clock: GatewayClock
    /// Where the random bytes come from: OpenSSL's CSPRNG, drawn a block at a time (one
    /// `RAND_bytes` call per 4 KiB instead of one per challenge).
    let random = RandomBytePool()

    /// A challenge that was issued: its bytes and expiry (unix seconds, as sent to clients).
    struct Issued: Sendable {
        let bytes: [UInt8]
        let expiresAt: Int64
    }

    /// A fresh challenge for a store step that issues it together with another change (the next
    /// challenge of `AttestStore.commitAssertion(…issuing:)`): random bytes, expiry `now` + ttl (ms).
    /// Never equal to `avoiding` (minted again in the 2^-256 case). nil when the CSPRNG fails.
    func mint(now: Int64, avoiding presented: Challenge? = nil) -> NextChallenge? {
        while true {
            guard let bytes = try? random.bytes(count: byteCount), let challenge = try? Challenge(bytes) else { return nil }
            if challenge != presented { return NextChallenge(challenge: challenge, expiresAt: now + ttlMillis) }
        }
    }

    /// How a minted challenge is sent to clients (expiry in unix seconds).
    static func issued(_ next: NextChallenge) -> Issued {
        Issued(bytes: next.challenge.bytes, expiresAt: next.expiresAt / 1000)
    }

    /// Issues a challenge for `keyId` and `purpose`.
    /// - completion: the issued challenge, or `StoreUnavailable` (also when the CSPRNG fails).
    func issue(keyId: KeyID, purpose: ChallengePurpose,
               completion: @escaping @Sendable (Result<Issued, StoreUnavailable>) -> Void) {
        guard let bytes = try? random.bytes(count: byteCount), let challenge = try? Challenge(bytes) else {
            completion(.failure(StoreUnavailable(.protocolError, detail: "random source failed")))
            return
        }
        let now = clock.now()
        let expiresAt = now + ttlMillis
        store.issueChallenge(challenge, keyId: keyId, purpose: purpose, expiresAt: expiresAt, now: now) { result in
            completion(result.map { Issued(bytes: bytes, expiresAt: expiresAt / 1000) })
        }
    }
}
