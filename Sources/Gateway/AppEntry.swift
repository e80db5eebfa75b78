import AppAttest
import GatewayConfig
import GatewayRules

/// A configured app as the verifier and the per-request policy need it.
struct AppEntry: Sendable {
    /// App ID and accepted environments, with the precomputed rpIdHash.
    let policy: AppPolicy
    /// `registration_ttl`: expiry and renewal times of the app's key registrations.
    let lifetime: RegistrationLifetime
    /// Keys per account, when the app counts them.
    let accounts: AccountBinding?
    /// What integrity codes of its device-key registrations do (`integrity_refuse`, `integrity_lower`).
    let integrity: IntegrityPolicy
    /// Whether the app's receipts are refreshed with Apple (`risk` configured): only then do its
    /// requests carry `App-Attest-Risk-Metric` / `App-Attest-Risk-Age`.
    let refreshesRisk: Bool

    init(_ app: AppConfiguration) {
        policy = AppPolicy(appId: app.appID.description, environment: app.environment)
        lifetime = RegistrationLifetime(app)
        accounts = AccountBinding(app)
        integrity = app.integrity
        refreshesRisk = app.risk != nil
    }
}
