import AppAttest
import AttestCrypto
import GatewayConfig
import GatewayHTTP
import GatewayIO
import GatewayStore

/// One generation of everything a request's handling reads that a reload (SIGHUP) may replace
/// (DESIGN.md section 10): the route table and compiled routes with their upstream pools, the
/// endpoints and the enforcer (apps, trust anchors, challenge settings), the header family, the
/// forwarding rules (`trusted_proxies`), the endpoints' rate limit and the access-log switch.
///
/// Immutable. `GatewayHandler` takes the current generation once per request, at its head, and keeps
/// it in the request's context until the access line is written: a request in flight during a reload
/// finishes on the tables it started with, the next one uses the new ones. What these tables do not
/// hold (listeners, store, server limits and timeouts) needs a restart (`RestartOnlySettings`).
final class GatewayTables: Sendable {
    /// 1 for the tables built at start, then one more per successful reload.
    let generation: UInt64
    let routeTable: RouteTable
    let routes: [CompiledRoute]
    let endpoints: GatewayEndpoints
    /// `POST <prefix>/renew` and `POST <prefix>/forget`.
    let lifecycle: LifecycleEndpoints
    let enforcer: AssertionEnforcer
    /// `POST <prefix>/register` (device keys, DESIGN.md section 8).
    let registration: RegistrationEndpoint
    let family: HeaderFamily
    /// `X-Forwarded-*`, `Forwarded`, `X-Real-IP` on forwarded requests (`trusted_proxies`).
    let forwarding: ForwardingHeaders
    /// `endpoints.prefix` as bytes.
    let endpointsPrefix: [UInt8]
    /// Per-client limit of the endpoints (`endpoints.rate_limit`), if configured.
    let endpointLimiter: ClientRateLimiter?
    /// `log.access`.
    let logAccess: Bool
    /// The upstream pools by upstream name.
    let pools: [String: UpstreamPoolLease]
    /// Signed verdicts (`verdict_token`), nil when no section is configured.
    let verdictTokens: VerdictTokenIssuer?
    /// The rate limit the limiter was made for (a reload with the same one keeps its buckets).
    private let rateLimit: EndpointsConfiguration.RateLimit?

    /// Builds the tables of `loaded`, reusing from `previous` what did not change: the upstream pools
    /// of upstreams configured the same (their idle connections stay warm) and the endpoints' rate
    /// limiter when its settings are the same (clients keep their buckets). Everything else is built
    /// anew, trust roots read again from their files.
    /// - Throws: `GatewayStartupError` naming the key: an extra root unreadable or without a PEM
    ///   certificate, an upstream that cannot be resolved, an upstream CA bundle that cannot be used.
    /// `metrics` observes the exchanges of the upstream pools made here (nil: not observed); `events`
    /// gets their lifecycle lines (endpoints ejected, names resolved or not).
    init(loaded: LoadedConfiguration, generation: UInt64, store: any AttestStore, keys: KeyCache, clock: GatewayClock,
         group: EventLoopGroup, metrics: GatewayMetrics?, events: (@Sendable (String, [(String, String)]) -> Void)?,
         previous: GatewayTables?, refreshHooks: ReceiptRefreshHooks? = nil) throws {
        let config = loaded.configuration

        // Trust: Apple's pinned roots plus, for test devices only, the configured extra roots.
        var extraRoots: [X509Certificate] = []
        for path in config.trust.extraRoots {
            do { extraRoots += try GatewayTables.trustRoots(inFile: path) } catch {
                throw GatewayStartupError("trust.extra_roots: \(error.description)")
            }
        }
        let anchors = try GatewayTables.addingReceiptRoots(config.trust,
                                                           to: extraRoots.isEmpty ? TrustAnchors.apple : try TrustAnchors.apple.adding(appAttestRoots: extraRoots))

        let refreshed = refreshHooks?.appIds ?? []
        let appEntries = Dictionary(config.apps.map {
            ($0.appID.description, AppEntry($0, refreshesRisk: refreshed.contains($0.appID.description)))
        }, uniquingKeysWith: { a, _ in a })
        let verifier = AttestationVerifier(trust: anchors, apps: config.apps.compactMap { appEntries[$0.appID.description]?.policy })
        let family = HeaderFamily(config.headers)
        let issuer = ChallengeIssuer(store: store, byteCount: config.endpoints.challengeBytes,
                                     ttlMillis: GatewayRuntime.millis(config.endpoints.challengeTTL), clock: clock)

        var pools: [String: UpstreamPoolLease] = [:]
        for upstream in config.upstreams {
            if let kept = previous?.pools[upstream.name], kept.canServe(upstream) {
                pools[upstream.name] = kept
            } else {
                pools[upstream.name] = UpstreamPoolLease(configuration: upstream,
                                                         pool: try GatewayRuntime.makePool(upstream, group: group, metrics: metrics,
                                                                                   events: events))
            }
        }
        var routes: [CompiledRoute] = []
        for route in config.routes {
            guard let lease = pools[route.upstream] else {
                throw GatewayStartupError("route \(route.name): unknown upstream \(route.upstream)")
            }
            routes.append(CompiledRoute(config: route, upstream: lease.pool, apps: config.apps))
        }

        self.generation = generation
        routeTable = loaded.routeTable
        self.routes = routes
        self.pools = pools
        self.family = family
        lifecycle = LifecycleEndpoints(store: store, keys: keys, apps: appEntries, issuer: issuer, clock: clock,
                                       errorHeader: config.headers.error)
        let fleetAttestRate = config.endpoints.fleetAttestRate.map {
            FleetAttestRate(count: $0.count, windowMillis: GatewayRuntime.millis($0.per))
        }
        endpoints = GatewayEndpoints(store: store, keys: keys, apps: appEntries, issuer: issuer, clock: clock,
                                     verifier: verifier, errorHeader: config.headers.error, lifecycle: lifecycle,
                                     nextChallenge: config.endpoints.nextChallenge,
                                     fleetAttestRate: fleetAttestRate, refreshHooks: refreshHooks)
        enforcer = AssertionEnforcer(store: store, keys: keys, apps: appEntries, issuer: issuer, clock: clock, family: family,
                                     nextChallenge: config.endpoints.nextChallenge, refreshHooks: refreshHooks)
        registration = RegistrationEndpoint(store: store, keys: keys, apps: appEntries, issuer: issuer, clock: clock,
                                            verifier: DeviceKeyRegistrationVerifier(attestations: verifier),
                                            errorHeader: config.headers.error, lifecycle: lifecycle,
                                            firstChallenge: endpoints.nextChallengeForNewKey, refreshHooks: refreshHooks,
                                            fleetAttestRate: fleetAttestRate)
        forwarding = ForwardingHeaders(trusted: config.trustedProxies)
        endpointsPrefix = Array(config.endpoints.prefix.utf8)
        rateLimit = config.endpoints.rateLimit
        if let previous, let limiter = previous.endpointLimiter, previous.rateLimit == config.endpoints.rateLimit {
            endpointLimiter = limiter
        } else {
            endpointLimiter = config.endpoints.rateLimit.map {
                ClientRateLimiter(requestsPerSecond: $0.requestsPerSecond, burst: $0.burst, clock: clock)
            }
        }
        logAccess = config.log.access
        do {
            verdictTokens = try VerdictTokenIssuer.make(configuration: config, clock: clock, store: store, events: events,
                                                        previous: previous?.verdictTokens)
        } catch let error as GatewayStartupError {
            throw error
        } catch {
            throw GatewayStartupError("verdict_token: \(error)")
        }
    }
}
