import AppAttest
import AttestCrypto

/// What the gateway keeps in memory about an attested key: the parsed public key and the facts fixed
/// at attestation (App ID, environment). These never change for a keyId (keyId = SHA-256 of the
/// public key), so caching them is safe; status (revocation) and counters live in the store and are
/// checked by every commit.
struct CachedKey: Sendable {
    /// Parsed P-256 key (thread-safe, reused for every verification).
    let publicKey: P256PublicKey
    /// The app the key was attested for, with its precomputed rpIdHash.
    let app: AppPolicy
    /// Environment from the attestation's aaguid.
    let environment: AppAttestEnvironment
}
