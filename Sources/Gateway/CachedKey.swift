import AppAttest
import AttestCrypto
import GatewayRules
import GatewayStore

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
    /// The keyId in standard base64, as injected upstream with a `valid` verdict (encoded once here
    /// rather than on every request).
    let keyIdBase64: String
    /// How the key was established (`KeyRecord.trustTier`).
    let tier: TrustTier

    init(keyId: KeyID, publicKey: P256PublicKey, app: AppPolicy, environment: AppAttestEnvironment, tier: TrustTier = .appAttest) {
        self.tier = tier
        self.publicKey = publicKey
        self.app = app
        self.environment = environment
        keyIdBase64 = Base64.encode(keyId.bytes)
    }
}
