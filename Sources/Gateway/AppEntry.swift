import AppAttest
import GatewayConfig

/// A configured app as the verifier and the per-request policy need it.
struct AppEntry: Sendable {
    /// App ID and accepted environments, with the precomputed rpIdHash.
    let policy: AppPolicy

    init(_ app: AppConfiguration) {
        policy = AppPolicy(appId: app.appID.description, environment: app.environment)
    }
}
