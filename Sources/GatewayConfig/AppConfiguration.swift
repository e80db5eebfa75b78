import GatewayRules

/// One app allowed to attest keys (`apps[]`): its App ID and which App Attest environments it may use.
public struct AppConfiguration: Sendable, Hashable {
    /// The App ID whose rpIdHash attestations must carry.
    public var appID: AppID
    /// Allowed environments (default production; `GatewayRules.EnvironmentPolicy`, the verifier's type too).
    public var environment: EnvironmentPolicy
    /// Fraud-metric receipts (`risk`): credentials and data server; nil = receipts are not refreshed.
    public var risk: RiskConfiguration? = nil

    /// Creates an app entry.
    public init(appID: AppID, environment: EnvironmentPolicy = .production) {
        self.appID = appID
        self.environment = environment
    }
}
