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

    /// A challenge that was issued: its bytes and expiry (unix seconds, as sent to clients).
    struct Issued: Sendable {
        let bytes: [UInt8]
        let expiresAt: Int64
    }

    /// Issues a challenge for `keyId` and `purpose`.
    /// - completion: the issued challenge, or `StoreUnavailable` (also when the CSPRNG fails).
    func issue(keyId: KeyID, purpose: ChallengePurpose,
               completion: @escaping @Sendable (Result<Issued, StoreUnavailable>) -> Void) {
        guard let bytes = try? SecureRandom.bytes(count: byteCount), let challenge = try? Challenge(bytes) else {
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
