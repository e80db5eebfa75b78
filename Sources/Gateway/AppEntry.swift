import AppAttest
import GatewayConfig

/// A configured app as the verifier and the per-request policy need it.
struct AppEntry: Sendable {
    /// App ID and accepted environments, with the precomputed rpIdHash.
    let policy: AppPolicy
    /// Whether the app's receipts are refreshed with Apple (`risk` configured): only then do its
    /// requests carry `App-Attest-Risk-Metric` / `App-Attest-Risk-Age`.
    let refreshesRisk: Bool

    init(_ app: AppConfiguration) {
        policy = AppPolicy(appId: app.appID.description, environment: app.environment)
        refreshesRisk = app.risk != nil
    }
}
