import AppAttest
import AttestCrypto
import Foundation
import GatewayConfig
import GatewayHTTP
import GatewayIO
import GatewayRedis
import GatewayStore

/// A running gateway built from a validated configuration: the store, the verifier with its pinned
/// trust anchors, one upstream pool per upstream, the data listeners and the admin listener
/// (DESIGN.md section 6, `Gateway`: composition).
///
///     let runtime = try GatewayRuntime(loaded: try GatewayConfiguration.load(path: "gateway.yaml"))
///     let bound = try runtime.start()
///     ...
///     runtime.shutdown { exit(0) }     // SIGTERM: drain in-flight requests, then stop
public final class GatewayRuntime: Sendable {
    /// The configuration it runs.
    public let loaded: LoadedConfiguration
    /// The store (memory or Redis).
    public let store: any AttestStore
    private let group: EventLoopGroup
    private let server: HTTPServer
    private let adminServer: HTTPServer?
    private let adminHandler: AdminHandler
    private let pools: [UpstreamPool]
    private let accessLog: AccessLog?
    /// The data listeners' handler (tests drive it directly).
    let handler: GatewayHandler
    let metrics: GatewayMetrics
    let keys: KeyCache

    /// Builds everything; nothing listens until `start()`.
    /// - Parameters:
    ///   - clock: wall-clock source (tests inject one to move time).
    ///   - loopCount: event loops (default: one per core).
    ///   - store: a store to use instead of the configured one (tests).
    ///   - events: where lifecycle events raised while running go (event name and fields; the
    ///     executable writes them as JSON lines on standard error), e.g. `tls_handshake_failed`
    ///     at most once per second. nil: dropped.
    /// - Throws: `GatewayStartupError` when an extra root cannot be read, a store URL cannot be used,
    ///   an upstream pool cannot be created, or a TLS certificate, key or CA file cannot be used
    ///   (named with its configuration path).
    public init(loaded: LoadedConfiguration, clock: GatewayClock = .system, loopCount: Int? = nil,
                store injectedStore: (any AttestStore)? = nil,
                events: (@Sendable (_ name: String, _ fields: [(String, String)]) -> Void)? = nil) throws {
        self.loaded = loaded
        let config = loaded.configuration

        // TLS: one server context per TLS listener (certificates by SNI; read and checked now, so a bad
        // file stops the start with its configuration path), one client context per https upstream.
        var listeners: [HTTPListenerConfiguration] = []
        for (index, listener) in config.listen.enumerated() {
            let endpoint = GatewayRuntime.listenAddress(listener.address)
            guard let tls = listener.tls else {
                listeners.append(HTTPListenerConfiguration(endpoint))
                continue
            }
            let settings = TLSServerSettings(
                certificates: tls.certificates.map { TLSServerSettings.Certificate(chainPath: $0.chain, keyPath: $0.key) },
                minVersion: tls.minVersion,
                alpn: GatewayRuntime.alpn)
            do {
                listeners.append(HTTPListenerConfiguration(endpoint, tls: try TLSServerContext(settings: settings)))
            } catch {
                throw GatewayStartupError("listen[\(index)].tls: \(error)")
            }
        }

        // Trust: Apple's pinned roots plus, for test devices only, the configured extra roots.
        var extraRoots: [X509Certificate] = []
        for path in config.trust.extraRoots {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw GatewayStartupError("trust.extra_roots: cannot read \(path)")
            }
            do {
                extraRoots += try X509Certificate.parseAll(pem: text)
            } catch {
                throw GatewayStartupError("trust.extra_roots: \(path) holds no usable PEM certificate (\(error))")
            }
        }
        let anchors = extraRoots.isEmpty ? TrustAnchors.apple : try TrustAnchors.apple.adding(appAttestRoots: extraRoots)

        group = EventLoopGroup(loopCount: loopCount)

        // Store: with Redis, one pipelined connection per event loop, living in the loop (its queue, its
        // poller, its end of turn): no queue hop per command, the commands of one batch in one send,
        // replies picked up with the loop's other sockets, completions on the loop that asked.
        if let injectedStore {
            store = injectedStore
        } else {
            store = try GatewayRuntime.makeStore(config.store, loops: group.loops)
        }

        let appEntries = Dictionary(config.apps.map { ($0.appID.description, AppEntry($0)) }, uniquingKeysWith: { a, _ in a })
        let verifier = AttestationVerifier(trust: anchors, apps: config.apps.map { AppEntry($0).policy })
        let family = HeaderFamily(config.headers)
        keys = KeyCache(shards: group.loops.count)
        metrics = GatewayMetrics(loops: group.loops.count)
        let issuer = ChallengeIssuer(store: store, byteCount: config.endpoints.challengeBytes,
                                     ttlMillis: GatewayRuntime.millis(config.endpoints.challengeTTL), clock: clock)

        var poolsByName: [String: UpstreamPool] = [:]
        var pools: [UpstreamPool] = []
        for upstream in config.upstreams {
            let address: SocketEndpoint
            switch upstream.endpoint {
            case .http(let host, let port), .https(let host, let port): address = .tcp(host: host, port: port)
            case .unix(let path): address = .unix(path: path)
            }
            var settings = GatewayHTTP.UpstreamConfiguration(
                name: upstream.name, address: address,
                connectTimeout: GatewayRuntime.seconds(upstream.connectTimeout),
                responseTimeout: GatewayRuntime.seconds(upstream.responseTimeout),
                maxIdlePerLoop: max(1, upstream.maxIdleConnections / max(1, group.loops.count)))
            if let tls = upstream.tls {
                do {
                    let context = try TLSClientContext(settings: TLSClientSettings(verify: tls.verify, caPath: tls.ca))
                    settings.tls = (context, tls.serverName)
                } catch {
                    throw GatewayStartupError("upstreams.\(upstream.name).tls: \(error)")
                }
            }
            let pool = try UpstreamPool(settings, group: group)
            poolsByName[upstream.name] = pool
            pools.append(pool)
        }
        self.pools = pools
        var routes: [CompiledRoute] = []
        for route in config.routes {
            guard let pool = poolsByName[route.upstream] else {
                throw GatewayStartupError("route \(route.name): unknown upstream \(route.upstream)")
            }
            routes.append(CompiledRoute(config: route, upstream: pool))
        }

        accessLog = config.log.access ? AccessLog(clock: clock, loops: group.loops.count) : nil
        let endpoints = GatewayEndpoints(store: store, keys: keys, apps: appEntries, issuer: issuer, clock: clock,
                                         verifier: verifier, errorHeader: config.headers.error)
        let enforcer = AssertionEnforcer(store: store, keys: keys, apps: appEntries, issuer: issuer, clock: clock,
                                         family: family)
        handler = GatewayHandler(routeTable: loaded.routeTable, routes: routes, endpoints: endpoints,
                                     enforcer: enforcer, family: family,
                                     forwarding: ForwardingHeaders(trusted: config.trustedProxies),
                                     endpointsPrefix: config.endpoints.prefix,
                                     accessLog: accessLog, metrics: metrics,
                                     events: RateLimitedEvents(sink: events ?? { _, _ in }, now: { EventLoop.now() }),
                                     endpointLimiter: config.endpoints.rateLimit.map {
                                         ClientRateLimiter(requestsPerSecond: $0.requestsPerSecond, burst: $0.burst, clock: clock)
                                     })

        let limits = HTTP1ParserLimits(maxHeaderBytes: config.limits.maxHeaderBytes, maxHeaderCount: config.limits.maxHeaders)
        let timeouts = HTTPServerTimeouts(headerRead: GatewayRuntime.seconds(config.timeouts.header),
                                          bodyRead: GatewayRuntime.seconds(config.timeouts.body),
                                          idle: GatewayRuntime.seconds(config.timeouts.idle),
                                          tlsHandshake: GatewayRuntime.seconds(config.timeouts.tlsHandshake))
        let http2 = HTTP2Settings(maxConcurrentStreams: config.http2.maxConcurrentStreams,
                                  initialWindowSize: config.http2.initialWindowSize,
                                  maxHeaderListSize: config.http2.maxHeaderListSize)
        server = HTTPServer(configuration: HTTPServerConfiguration(
            listeners: listeners, limits: limits, timeouts: timeouts,
            maxConnections: config.limits.maxConnections, http2: http2),
            group: group, handler: handler)
        adminHandler = AdminHandler(store: store, metrics: metrics, keys: keys, accessLog: accessLog)
        if let admin = config.admin {
            adminServer = HTTPServer(configuration: HTTPServerConfiguration(listeners: [HTTPListenerConfiguration(GatewayRuntime.listenAddress(admin))]),
                                     group: group, handler: adminHandler)
        } else {
            adminServer = nil
        }
    }

    /// The listeners once started: data listeners in configuration order, then the admin listener.
    public struct Listeners: Sendable {
        /// Bound data listeners (real ports when 0 was configured).
        public let data: [HTTPBoundListener]
        /// Bound admin listener, if configured.
        public let admin: HTTPBoundListener?
    }

    /// Binds the listeners and starts serving.
    /// - Throws: when a listener cannot be bound (nothing stays bound then).
    @discardableResult
    public func start() throws -> Listeners {
        let data = try server.start()
        var admin: HTTPBoundListener?
        if let adminServer {
            do {
                admin = try adminServer.start().first
            } catch {
                server.shutdown(gracePeriod: 0) {}
                throw error
            }
        }
        return Listeners(data: data, admin: admin)
    }

    /// Graceful stop (SIGTERM): health and readiness turn 503, listeners stop accepting, requests in
    /// flight finish within `timeouts.drain`, then pools, store and loops are released and
    /// `completion` runs (once, on an arbitrary queue).
    public func shutdown(completion: @escaping @Sendable () -> Void) {
        adminHandler.beginDraining()
        let grace = GatewayRuntime.seconds(loaded.configuration.timeouts.drain)
        let pools = self.pools
        let adminServer = self.adminServer
        let store = self.store
        let accessLog = self.accessLog
        let group = self.group
        server.shutdown(gracePeriod: grace) {
            // Off the event loops: the last connection to close calls this on its own loop, and
            // `group.shutdown()` waits on every loop's queue (a sync onto the caller's queue traps:
            // SIGILL when SIGTERM came while an admin answer was in flight).
            let finish: @Sendable () -> Void = {
                DispatchQueue.global().async {
                    for pool in pools { pool.shutdown() }
                    store.close()
                    accessLog?.flush()
                    group.shutdown()
                    completion()
                }
            }
            if let adminServer { adminServer.shutdown(gracePeriod: 0, completion: finish) } else { finish() }
        }
    }

    /// Start-up checks of the store that deserve an operator's attention (not failures): a Redis whose
    /// `maxmemory-policy` is not `noeviction` may evict key records (DESIGN.md section 4), and an
    /// unreachable store makes every protected request answer 503 until it comes back.
    /// - completion: warnings, possibly none (called once, on an arbitrary queue).
    public func storeWarnings(completion: @escaping @Sendable ([String]) -> Void) {
        guard let redis = store as? RedisStore else {
            completion([])
            return
        }
        redis.evictionPolicy { result in
            switch result {
            case .success("noeviction"), .success(nil):
                completion([])
            case .success(let policy?):
                completion(["store: Redis maxmemory-policy is \(policy); key records must never be evicted: set maxmemory-policy noeviction"])
            case .failure(let error):
                completion(["store: Redis is not reachable yet (\(error)); protected routes answer 503 store_unavailable until it is"])
            }
        }
    }

    /// Writes buffered access-log lines now.
    public func flushLogs() { accessLog?.flush() }

    /// The Prometheus text of `/metrics`.
    public var metricsText: String { metrics.prometheusText() }

    // MARK: - Conversions

    static func makeStore(_ configuration: StoreConfiguration, loops: [EventLoop] = []) throws -> any AttestStore {
        switch configuration.kind {
        case .memory:
            return MemoryStore()
        case .redis(let url):
            var redis = RedisStore.Configuration(url: url)
            redis.commandTimeout = Int(millis(configuration.commandTimeout))
            redis.connectTimeout = Int(millis(configuration.connectTimeout))
            redis.loops = loops
            do {
                return try RedisStore(configuration: redis)
            } catch {
                throw GatewayStartupError("store: \(error)")
            }
        }
    }

    /// ALPN protocols offered on TLS listeners, in preference order (RFC 7301).
    static let alpn = ["h2", "http/1.1"]

    static func listenAddress(_ address: GatewayConfig.SocketAddress) -> SocketEndpoint {
        switch address {
        case .ip(let host, let port): return .tcp(host: host, port: port)
        case .unix(let path): return .unix(path: path)
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        let c = duration.components
        return Double(c.seconds) + Double(c.attoseconds) / 1e18
    }

    static func millis(_ duration: Duration) -> Int64 {
        let c = duration.components
        return c.seconds * 1000 + c.attoseconds / 1_000_000_000_000_000
    }
}

/// A gateway could not be built from its configuration (beyond what validation catches: unreadable
/// files, unusable store settings).
public struct GatewayStartupError: Error, CustomStringConvertible {
    /// What went wrong, naming the configuration key.
    public let description: String
    init(_ description: String) { self.description = description }
}
