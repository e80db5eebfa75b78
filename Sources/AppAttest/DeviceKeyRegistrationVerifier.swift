import AttestCrypto
import GatewayRules

/// Verifies `POST {prefix}/register` (DESIGN.md section 8) as a pure function of its inputs: the
/// request, the time, the trust anchors (inside `attestations`) and, for the assertion variant, the
/// App Attest key the gateway holds. The challenge itself (purpose, key, expiry, single use) is the
/// store's atomic step afterwards.
///
/// Order (first failure is the reason): `public_key_invalid` (not a 65-byte uncompressed point on
/// P-256), `backing_unknown`, `integrity_invalid` (`IntegrityCodes` shape), `signature_encoding` /
/// `bad_signature` (ECDSA P-256 / SHA-256 by the device key over the registration client data,
/// strict DER), then the App Attest evidence if any:
/// - attestation: Apple's nine steps (`AttestationVerifier`) with keyId = `appAttest.keyId` and
///   clientDataHash = SHA-256(registration client data); its reasons pass through (`nonce_mismatch`
///   when the attestation commits to other client data); on success the verified App Attest key is
///   `RegisteredDeviceKey.appAttestKey` (for the gateway to store, as `/attest` would);
/// - assertion: `AssertionVerifier` with the held key and its app over the registration client data
///   (no counter check: the device key's one-time challenge is the replay guard).
/// Thread-safe (immutable).
public struct DeviceKeyRegistrationVerifier: Sendable {
    /// An App Attest key the gateway already attested, as the assertion variant needs it.
    public struct HeldKey: Sendable {
        /// The attested key.
        public let publicKey: P256PublicKey
        /// Its app (rpIdHash precomputed).
        public let app: AppPolicy
        /// Its environment.
        public let environment: AppAttestEnvironment

        /// Creates the held key.
        public init(publicKey: P256PublicKey, app: AppPolicy, environment: AppAttestEnvironment) {
            self.publicKey = publicKey
            self.app = app
            self.environment = environment
        }
    }

    /// Verifies the attestation variant (trust anchors and apps).
    public let attestations: AttestationVerifier

    /// Creates a verifier.
    public init(attestations: AttestationVerifier) {
        self.attestations = attestations
    }

    /// Verifies `registration`.
    /// - Parameters:
    ///   - now: validation time for the attestation chain, unix seconds.
    ///   - heldKey: the App Attest key of `appAttest.keyId` for the assertion variant (nil: unknown,
    ///     rejected as `assertion_malformed`; the gateway answers `key_unknown` before calling).
    public func verify(_ registration: DeviceKeyRegistration, now: Int64, heldKey: HeldKey? = nil) -> DeviceKeyRegistrationDecision {
        func reject(_ reason: ReasonCode, _ detail: String) -> DeviceKeyRegistrationDecision {
            .rejected(reason, detail: detail, spentAttestation: false)
        }
        guard registration.publicKey.count == 65, registration.publicKey.first == 0x04,
              let publicKey = try? P256PublicKey(x963: registration.publicKey) else {
            return reject(.publicKeyInvalid, "publicKey must be a 65-byte uncompressed P-256 point on the curve")
        }
        guard let backing = DeviceKeyBacking(rawValue: registration.backing) else {
            return reject(.backingUnknown, "backing must be secure_enclave or software")
        }
        if let problem = IntegrityCodes.problem(registration.integrity) {
            return reject(.integrityInvalid, problem)
        }
        let clientData = registration.clientData
        switch publicKey.verify(signature: registration.signature, message: clientData) {
        case .valid: break
        case .invalid: return reject(.badSignature, "the signature does not verify with publicKey over the registration client data")
        case .malformedEncoding: return reject(.signatureEncoding, "signature is not a strict DER ECDSA signature")
        }
        let keyId = SHA256.hash(registration.publicKey)
        func accepted(platform: Bool, spent: Bool, appAttestKeyId: [UInt8]?, appId: String?,
                      environment: AppAttestEnvironment?, appAttestKey: AttestedKey? = nil) -> DeviceKeyRegistrationDecision {
            .accepted(RegisteredDeviceKey(keyId: keyId, publicKey: publicKey, backing: backing, integrity: registration.integrity,
                                          platformAttested: platform, platformTokenSpent: spent, appAttestKeyId: appAttestKeyId,
                                          appId: appId, environment: environment, appAttestKey: appAttestKey))
        }
        switch registration.appAttest {
        case nil:
            return accepted(platform: false, spent: false, appAttestKeyId: nil, appId: nil, environment: nil)
        case .attestation(let appKeyId, let object)?:
            switch attestations.verify(attestationObject: object, keyId: appKeyId, clientDataHash: SHA256.hash(clientData), now: now) {
            case .rejected(let reason, let detail, _):
                return .rejected(reason, detail: detail.isEmpty ? "appAttest.attestation: \(reason.rawValue)" : "appAttest.attestation: \(detail)",
                                 spentAttestation: true)
            case .accepted(let key, _):
                return accepted(platform: true, spent: true, appAttestKeyId: appKeyId, appId: key.appId,
                                environment: key.environment, appAttestKey: key)
            }
        case .assertion(let appKeyId, let object)?:
            guard let heldKey else { return reject(.assertionMalformed, "appAttest.keyId is not an App Attest key the gateway holds") }
            switch AssertionVerifier.verify(assertionObject: object, publicKey: heldKey.publicKey, app: heldKey.app,
                                            clientData: clientData, previousCounter: nil) {
            case .rejected(let reason, let detail, _):
                return reject(reason, detail.isEmpty ? "appAttest.assertion: \(reason.rawValue)" : "appAttest.assertion: \(detail)")
            case .accepted:
                return accepted(platform: true, spent: false, appAttestKeyId: appKeyId, appId: heldKey.app.appId,
                                environment: heldKey.environment)
            }
        }
    }
}
