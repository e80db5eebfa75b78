import AppAttest
import GatewayConfig
import GatewayHTTP
import GatewayRules

/// A route ready for requests: its configuration, the live upstream pool and the policy facts
/// precomputed for the per-request path.
///
/// A final class, immutable: a request takes it from the route table and its closures capture it
/// with one retain, where a struct of this size (configuration, sets, dictionaries, arrays) cost a
/// retain and a release per field on every copy.
final class CompiledRoute: Sendable {
    /// The validated configuration (mode, limits, window, bindings...).
    let config: RouteConfiguration
    /// Where permitted requests go.
    let upstream: UpstreamPool
    /// App IDs allowed on the route (nil: every configured app).
    let allowedApps: Set<String>?
    /// Environment the route restricts keys to (nil: whatever the app allows).
    let environment: AppAttestEnvironment?
    /// Bound header names as configured (their spelling is what the client signs), as bytes, and in
    /// lower case with `-` for `_` (`cgiLower`: how CGI, WSGI, PHP and Rack backends name a field,
    /// so that `X_User_Token` counts as a copy of a bound `X-User-Token`).
    let boundNames: [(name: String, bytes: [UInt8], cgiLower: [UInt8])]
    /// The route's `connect_timeout` and `response_timeout` in seconds (nil: the upstream's).
    let connectTimeout: Double?
    let responseTimeout: Double?
    /// The `signals` policy in force per app ID (the route's checks over the app's), only for apps
    /// with at least one check; empty when no check applies on this route.
    let signalPolicies: [String: SignalPolicy]

    /// - Parameter apps: the configured apps (their `signals` apply on the route unless it
    ///   configures the same signal itself).
    init(config: RouteConfiguration, upstream: UpstreamPool, apps: [AppConfiguration] = []) {
        var policies: [String: SignalPolicy] = [:]
        if config.mode != .off {
            for app in apps {
                let policy = config.signals?.overriding(app.signals) ?? app.signals ?? SignalPolicy()
                if !policy.isEmpty { policies[app.appID.description] = policy }
            }
        }
        signalPolicies = policies
        self.config = config
        self.upstream = upstream
        allowedApps = config.apps.map { Set($0.map { $0.description }) }
        environment = config.environment
        boundNames = config.bindHeaders.map { ($0, Array($0.utf8), HeaderFamily.lower($0).map { $0 == 0x5F ? 0x2D : $0 }) }
        connectTimeout = config.connectTimeout.map(GatewayRuntime.seconds)
        responseTimeout = config.responseTimeout.map(GatewayRuntime.seconds)
    }

    /// The `signals` policy for a key of `appId` on this route, nil when none applies.
    @inline(__always)
    func signalPolicy(appId: String) -> SignalPolicy? {
        signalPolicies.isEmpty ? nil : signalPolicies[appId]
    }
}
