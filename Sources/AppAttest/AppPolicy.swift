import AttestCrypto
import GatewayRules

/// One app the verifier accepts: its App ID and environment policy (Apple: attestation steps 6, 8).
///
/// App ID = Team ID + "." + bundle ID (on macOS: the signing identifier). rpIdHash is precomputed.
public struct AppPolicy: Sendable, Equatable {
    /// "TEAMID.bundle.id".
    public let appId: String
    /// Accepted environments.
    public let environment: EnvironmentPolicy
    /// SHA-256 of the App ID's UTF-8 bytes.
    public let rpIdHash: [UInt8]

    /// An app from its full App ID.
    public init(appId: String, environment: EnvironmentPolicy) {
        self.appId = appId
        self.environment = environment
        self.rpIdHash = SHA256.hash(utf8: appId)
    }

    /// An app from Team ID and bundle ID (App ID = teamId + "." + bundleId).
    public init(teamId: String, bundleId: String, environment: EnvironmentPolicy) {
        self.init(appId: teamId + "." + bundleId, environment: environment)
    }
}
