import AppAttest
import GatewayConfig
import AttestCrypto
import GatewayRules
import GatewayStore

/// What the gateway keeps in memory about an attested key: the parsed public key and the facts fixed
/// at attestation (App ID, environment). These never change for a keyId (keyId = SHA-256 of the
/// public key), so caching them is safe; status (revocation) and counters live in the store and are
/// checked by every commit.
///
/// A final class, immutable: the cache hands the same instance to every request of the key (one
/// retain per copy instead of one per field).
final class CachedKey: Sendable {
    /// Parsed P-256 key (thread-safe, reused for every verification).
    let publicKey: P256PublicKey
    /// The app the key was attested for, with its precomputed rpIdHash.
    let app: AppPolicy
    /// Environment from the attestation's aaguid.
    let environment: AppAttestEnvironment
    /// The keyId in standard base64, as injected upstream with a `valid` verdict (encoded once here
    /// rather than on every request).
    let keyIdBase64: String
    /// The key's trust tier as policy reads it (`TrustTier.effective`: `attested` or `device`).
    let tier: TrustTier
    /// Whether App Attest vouched for the key (`App-Attest-Platform-Attested`).
    let platformAttested: Bool
    /// The key's integrity codes joined by `,` (`App-Attest-Integrity`), nil when none.
    let integrity: String?
    /// A device key (`POST {prefix}/register`): signs requests with `App-Attest-Signature`; an App
    /// Attest key sends assertions.
    let isDeviceKey: Bool
    /// `tier.satisfies(.attested)` and `tier.satisfies(.device)`, computed once (per-request checks
    /// compare booleans, not strings).
    let passesAttested: Bool, passesDevice: Bool

    init(keyId: KeyID, publicKey: P256PublicKey, app: AppPolicy, environment: AppAttestEnvironment,
         tier: TrustTier = .attested, platformAttested: Bool = true, integrity: [String] = [], isDeviceKey: Bool = false) {
        self.publicKey = publicKey
        self.app = app
        self.environment = environment
        keyIdBase64 = Base64.encode(keyId.bytes)
        self.tier = tier.effective
        self.platformAttested = platformAttested
        self.integrity = integrity.isEmpty ? nil : integrity.joined(separator: ",")
        self.isDeviceKey = isDeviceKey
        passesAttested = tier.satisfies(.attested)
        passesDevice = tier.satisfies(.device)
    }

    /// Whether the key's tier passes a route's `min_tier`.
    func passes(_ minimum: RouteConfiguration.MinimumTier) -> Bool {
        switch minimum {
        case .attested: return passesAttested
        case .device: return passesDevice
        }
    }

    /// The cached form of a stored record (tier, platform flag, integrity and kind from the record).
    convenience init(record: KeyRecord, publicKey: P256PublicKey, app: AppPolicy) {
        self.init(keyId: record.keyId, publicKey: publicKey, app: app, environment: record.environment,
                  tier: record.trustTier, platformAttested: record.platformAttested, integrity: record.integrity,
                  isDeviceKey: record.backing != nil)
    }
}
