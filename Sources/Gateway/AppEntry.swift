import AppAttest
import GatewayConfig

/// A configured app as the verifier and the per-request policy need it.
struct AppEntry: Sendable {
    /// App ID and accepted environments, with the precomputed rpIdHash.
    let policy: AppPolicy

    init(_ app: AppConfiguration) {
        let environment: EnvironmentPolicy
        switch app.environment {
        case .production: environment = .production
        case .development: environment = .development
        case .any: environment = .any
        }
        policy = AppPolicy(appId: app.appID.description, environment: environment)
    }
}
