import GatewayRules

/// One app allowed to attest keys (`apps[]`): its App ID and which App Attest environments it may use.
public struct AppConfiguration: Sendable, Hashable {
    /// The App ID whose rpIdHash attestations must carry.
    public var appID: AppID
    /// Allowed environments (default production; `GatewayRules.EnvironmentPolicy`, the verifier's type too).
    public var environment: EnvironmentPolicy
    /// Policy on the iOS 27 signals of this app's assertions (`signals`), on every route (a route's
    /// own `signals` replace it signal by signal).
    public var signals: SignalPolicy?

    /// Creates an app entry.
    public init(appID: AppID, environment: EnvironmentPolicy = .production, signals: SignalPolicy? = nil) {
        self.appID = appID
        self.environment = environment
        self.signals = signals
    }
}
