import GatewayRules

/// One app allowed to attest keys (`apps[]`): its App ID and which App Attest environments it may use.
public struct AppConfiguration: Sendable, Hashable {
    /// The App ID whose rpIdHash attestations must carry.
    public var appID: AppID
    /// Allowed environments (default production; `GatewayRules.EnvironmentPolicy`, the verifier's type too).
    public var environment: EnvironmentPolicy
    /// What integrity codes of a device-key registration do (`integrity_refuse`, `integrity_lower`;
    /// DESIGN.md section 8). Default: nothing refused or lowered.
    public var integrity = IntegrityPolicy()

    /// Creates an app entry.
    public init(appID: AppID, environment: EnvironmentPolicy = .production) {
        self.appID = appID
        self.environment = environment
    }
}
