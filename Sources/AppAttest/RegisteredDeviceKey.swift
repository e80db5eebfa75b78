import AttestCrypto
import GatewayRules

/// What an accepted device-key registration establishes (`DeviceKeyRegistrationVerifier`), before
/// the app's integrity policy and the store.
public struct RegisteredDeviceKey: Sendable {
    /// keyId = SHA-256 of the device key's point (32 bytes): the `kid`.
    public let keyId: [UInt8]
    /// The parsed device key.
    public let publicKey: P256PublicKey
    /// Where the key lives.
    public let backing: DeviceKeyBacking
    /// The integrity codes as sent (valid shape).
    public let integrity: [String]
    /// Whether App Attest vouched for the registration (a valid attestation or assertion).
    public let platformAttested: Bool
    /// Whether an App Attest attestation was spent on it (the attestation variant).
    public let platformTokenSpent: Bool
    /// The App Attest keyId that vouched, if any.
    public let appAttestKeyId: [UInt8]?
    /// The App ID App Attest vouched for (nil without App Attest: the caller decides the app).
    public let appId: String?
    /// The App Attest environment (nil without App Attest).
    public let environment: AppAttestEnvironment?
    /// The App Attest key the attestation form verified, with what `POST {prefix}/attest` stores of
    /// one (public key point, receipt, environment, App ID, counter 0 as the attestation left it);
    /// nil for the other forms (the assertion form's key is one the gateway already holds). The
    /// gateway stores it as an App Attest key when it holds none of that keyId, so that the key can
    /// vouch again later with an assertion (DESIGN.md section 8).
    public let appAttestKey: AttestedKey?

    /// Creates the result (the verifier's output).
    public init(keyId: [UInt8], publicKey: P256PublicKey, backing: DeviceKeyBacking, integrity: [String],
                platformAttested: Bool, platformTokenSpent: Bool, appAttestKeyId: [UInt8]?, appId: String?,
                environment: AppAttestEnvironment?, appAttestKey: AttestedKey? = nil) {
        self.keyId = keyId
        self.publicKey = publicKey
        self.backing = backing
        self.integrity = integrity
        self.platformAttested = platformAttested
        self.platformTokenSpent = platformTokenSpent
        self.appAttestKeyId = appAttestKeyId
        self.appId = appId
        self.environment = environment
        self.appAttestKey = appAttestKey
    }
}
