import GatewayRules

/// One app allowed to attest keys (`apps[]`): its App ID and which App Attest environments it may use.
public struct AppConfiguration: Sendable, Hashable {
    /// The App ID whose rpIdHash attestations must carry.
    public var appID: AppID
    /// Allowed environments (default production; `GatewayRules.EnvironmentPolicy`, the verifier's type too).
    public var environment: EnvironmentPolicy
    /// How long a key registration of this app stays valid (`registration_ttl`); nil = forever. The
    /// key must renew (`POST {prefix}/renew`) before it ends, else it answers `401 key_expired`.
    public var registrationTTL: Duration? = nil
    /// Keys per account (`account_header`...), nil when the app does not count keys per account.
    public var accountKeys: AccountKeysConfiguration? = nil
    /// What integrity codes of a device-key registration do (`integrity_refuse`, `integrity_lower`;
    /// DESIGN.md section 8). Default: nothing refused or lowered.
    public var integrity = IntegrityPolicy()
    /// Policy on the iOS 27 signals of this app's assertions (`signals`), on every route (a route's
    /// own `signals` replace it signal by signal).
    public var signals: SignalPolicy?
    /// Signed verdicts for this app's keys (`apps[].verdict_token`); nil: the top-level section applies.
    public var verdictToken: VerdictTokenConfiguration?
    /// Fraud-metric receipts (`risk`): credentials and data server; nil = receipts are not refreshed.
    public var risk: RiskConfiguration? = nil

    /// Creates an app entry.
    public init(appID: AppID, environment: EnvironmentPolicy = .production, signals: SignalPolicy? = nil) {
        self.appID = appID
        self.environment = environment
        self.signals = signals
    }
}
