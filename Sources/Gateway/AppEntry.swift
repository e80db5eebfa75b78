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
    /// Whether the running process refreshes the app's receipts with Apple (`risk` configured when it
    /// started: restart-only): only then do its requests carry `App-Attest-Risk-Metric` /
    /// `App-Attest-Risk-Age` and meet a route's `max_risk_metric`. A reload that adds or removes
    /// `risk` changes nothing here until a restart, as it changes nothing in the refresher (before,
    /// the request path followed the reload while the refresher did not: a removed `risk` stopped
    /// the route's denials while receipts were still exchanged, an added one denied on metrics that
    /// nothing in this process would ever refresh).
    let refreshesRisk: Bool

    /// The entry of `app`; `refreshesRisk`: the running refresher exchanges its receipts.
    init(_ app: AppConfiguration, refreshesRisk: Bool) {
        policy = AppPolicy(appId: app.appID.description, environment: app.environment)
        lifetime = RegistrationLifetime(app)
        accounts = AccountBinding(app)
        integrity = app.integrity
        self.refreshesRisk = refreshesRisk
    }
}
