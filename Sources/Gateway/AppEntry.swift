import AppAttest
import GatewayConfig
import GatewayRules

/// A configured app as the verifier and the per-request policy need it.
struct AppEntry: Sendable {
    /// App ID and accepted environments, with the precomputed rpIdHash.
    let policy: AppPolicy
    /// What integrity codes of its device-key registrations do (`integrity_refuse`, `integrity_lower`).
    let integrity: IntegrityPolicy

    init(_ app: AppConfiguration) {
        policy = AppPolicy(appId: app.appID.description, environment: app.environment)
        integrity = app.integrity
    }
}
