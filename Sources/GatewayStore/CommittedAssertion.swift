import GatewayRules

/// What `commitAssertion` returns when it accepted an assertion: the stored key fields the gateway
/// needs for its policy checks (environment, app, status) and to confirm the public key it verified the
/// signature with, so a gateway holding a cached parsed public key needs one store round trip per
/// request (DESIGN.md section 4).
public struct CommittedAssertion: Equatable, Sendable {
    /// The stored 65-byte uncompressed public point; compare with the key the signature was verified with.
    public let publicKey: [UInt8]
    /// Environment of the key.
    public let environment: AppAttestEnvironment
    /// App ID the key was attested for.
    public let appId: String
    /// Always `.active` on acceptance (a revoked key is refused).
    public let status: KeyStatus
    /// Trust tier of the key.
    public let trustTier: TrustTier
    /// Registration expiry (unix ms) or nil.
    public let expiresAt: Int64?
    /// The highest counter stored after this commit (equals the committed counter unless it was accepted
    /// out of order inside the anti-replay window).
    public let counter: UInt32

    /// Memberwise initialiser (used by store implementations).
    public init(publicKey: [UInt8], environment: AppAttestEnvironment, appId: String, status: KeyStatus,
                trustTier: TrustTier, expiresAt: Int64?, counter: UInt32) {
        self.publicKey = publicKey
        self.environment = environment
        self.appId = appId
        self.status = status
        self.trustTier = trustTier
        self.expiresAt = expiresAt
        self.counter = counter
    }
}
