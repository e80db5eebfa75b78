import AppAttest
import AttestCrypto
import Foundation
import GatewayConfig
import GatewayHTTP
import GatewayIO
import GatewayRedis
import GatewayStore
import Synchronization

/// A running gateway built from a validated configuration: the store, the verifier with its pinned
/// trust anchors, one upstream pool per upstream, the data listeners and the admin listener
/// (DESIGN.md section 6, `Gateway`: composition).
///
///     let runtime = try GatewayRuntime(loaded: try GatewayConfiguration.load(path: "gateway.yaml"))
///     let bound = try runtime.start()
///     ...
///     runtime.shutdown { exit(0) }     // SIGTERM: drain in-flight requests, then stop
public final class GatewayRuntime: Sendable {
    /// The configuration in force: the one it started with, then the last one a reload (SIGHUP)
    /// accepted (whose restart-only settings, `RestartOnlySettings`, may still be the started ones).
    public var loaded: LoadedConfiguration { current.withLock { $0 } }
    /// The configuration it started with (what restart-only settings are compared against).
    public let started: LoadedConfiguration
    /// The store (memory or Redis).
    public let store: any AttestStore
    /// `store` as requests use it: commands, errors and latency counted (`MeasuredStore`).
    let measuredStore: any AttestStore
    /// Where the upstream pools' lifecycle lines go (the `events` of `init`).
    let upstreamEvents: (@Sendable (String, [(String, String)]) -> Void)?
    let group: EventLoopGroup
    let server: HTTPServer
    private let adminServer: HTTPServer?
    /// The admin listener's own event loop: a flood of scrapes (`/metrics` renders every series) is
    /// served there and can never delay the data listeners' loops (Envoy keeps its admin off the
    /// workers too).
    private let adminGroup: EventLoopGroup?
    private let adminHandler: AdminHandler
    private let accessLog: AccessLog?
    /// Set when the shutdown gave up waiting for the last access lines (`accessLogUnflushedAtStop`).
    private let accessLogUnflushed = Atomic<Bool>(false)
    /// Each loop's store connection health (readiness, metrics, outage lines).
    let storeHealth: StoreHealth
    /// The data listeners' handler (tests drive it directly).
    let handler: GatewayHandler
    let metrics: GatewayMetrics
    let keys: KeyCache
    let clock: GatewayClock
    /// The route tables in force (`GatewayTables`), swapped by `reload`.
    let tables: CurrentTables
    /// The server context of each TLS listener, by its index in `listen` (certificates reload in place).
    let tlsContexts: [Int: TLSServerContext]
    /// Reload counters for `/metrics`.
    let reloads: ConfigReloadStatistics
    let current: Mutex<LoadedConfiguration>
    /// Serializes reloads (SIGHUP normally arrives on one queue; tests may call `reload` from anywhere).
    let reloading = Mutex<Void>(())
    /// Exchanges receipts with Apple's data server for apps with `risk` settings (nil: none has).
    let receiptRefresher: ReceiptRefresher?

    /// How long listeners keep accepting after a SIGTERM before they close (`HTTPServerConfiguration.handoverSettle`):
    /// long enough for connections already on their way to an old instance during a handover to be
    /// accepted and served.
    static let handoverSettle = 0.5

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
        self.started = loaded
        current = Mutex(loaded)
        self.clock = clock
        let config = loaded.configuration

        // TLS: one server context per TLS listener (certificates by SNI; read and checked now, so a bad
        // file stops the start with its configuration path), one client context per https upstream.
        var listeners: [HTTPListenerConfiguration] = []
        var tlsContexts: [Int: TLSServerContext] = [:]
        for (index, listener) in config.listen.enumerated() {
            let endpoint = GatewayRuntime.listenAddress(listener.address)
            guard let tls = listener.tls else {
                var plain = HTTPListenerConfiguration(endpoint)
                plain.proxyProtocol = listener.proxyProtocol
                listeners.append(plain)
                continue
            }
            do {
                let context = try TLSServerContext(settings: GatewayRuntime.tlsSettings(tls))
                tlsContexts[index] = context
                var secure = HTTPListenerConfiguration(endpoint, tls: context)
                secure.proxyProtocol = listener.proxyProtocol
                listeners.append(secure)
            } catch {
                throw GatewayStartupError("listen[\(index)].tls: \(error)")
            }
        }
        self.tlsContexts = tlsContexts

        group = EventLoopGroup(loopCount: loopCount)

        // Store: with Redis, one pipelined connection per event loop, living in the loop (its queue, its
        // poller, its end of turn): no queue hop per command, the commands of one batch in one send,
        // replies picked up with the loop's other sockets, completions on the loop that asked.
        // Its connections report their health (readiness, metrics, one line per outage and recovery).
        let lifecycle: RateLimitedEvents.Sink = events ?? { _, _ in }
        if let injectedStore {
            storeHealth = StoreHealth(connections: 0, tracked: false, events: lifecycle)
            store = injectedStore
        } else {
            var tracked = false
            if case .redis = config.store.kind { tracked = true }
            let health = StoreHealth(connections: group.loops.count, tracked: tracked, events: lifecycle)
            storeHealth = health
            store = try GatewayRuntime.makeStore(config.store, loops: group.loops) { index, state, detail in
                health.update(connection: index, health: state, detail: detail)
            }
        }

        keys = KeyCache(shards: group.loops.count)
        // Histogram buckets up to the configured timeouts: an upstream exchange waits at most its
        // connect plus its response timeout for the head; a request adds the header and body reads.
        // (Sized at start: a reload that raises the timeouts keeps these buckets.)
        let upstreamSpan = config.upstreams.map { GatewayRuntime.seconds($0.connectTimeout) + GatewayRuntime.seconds($0.responseTimeout) }.max() ?? 0
        metrics = GatewayMetrics(
            loops: group.loops.count,
            requestSeconds: max(10, GatewayRuntime.seconds(config.timeouts.header) + GatewayRuntime.seconds(config.timeouts.body) + upstreamSpan),
            upstreamSeconds: max(1, upstreamSpan),
            storeSeconds: GatewayRuntime.seconds(config.store.commandTimeout))
        for loop in group.loops { loop.queue.setSpecific(key: GatewayMetrics.loopKey, value: loop.index) }
        // What requests use of the store: measured (commands, errors, latency).
        measuredStore = MeasuredStore(store, metrics: metrics)
        upstreamEvents = events
        reloads = ConfigReloadStatistics(startedAt: clock.now())
        // Fraud-metric receipts (issue 12): one refresher on the first loop, fed by the attestations.
        let refresher = try ReceiptRefresher.make(
            config: config, store: store,
            trust: try GatewayTables.addingReceiptRoots(config.trust, to: TrustAnchors.apple),
            loop: group.loops[0], clock: clock, events: lifecycle)
        receiptRefresher = refresher
        let refreshHooks = refresher.map(ReceiptRefreshHooks.init)
        // Routes, upstream pools, apps, trust, endpoints, header family: the tables a reload replaces.
        tables = CurrentTables(try GatewayTables(loaded: loaded, generation: 1, store: measuredStore, keys: keys, clock: clock,
                                                 group: group, metrics: metrics, events: events, previous: nil,
                                                 refreshHooks: refreshHooks),
                               loops: group.loops)

        // Always there (`log.access` may be turned on by a reload); it writes only what it is given.
        let accessLog = AccessLog(clock: clock, loops: group.loops.count)
        self.accessLog = accessLog
        handler = GatewayHandler(tables: tables, accessLog: accessLog, metrics: metrics,
                                 events: RateLimitedEvents(sink: events ?? { _, _ in }, now: { EventLoop.now() }))

        let limits = HTTP1ParserLimits(maxHeaderBytes: config.limits.maxHeaderBytes, maxHeaderCount: config.limits.maxHeaders)
        let timeouts = HTTPServerTimeouts(headerRead: GatewayRuntime.seconds(config.timeouts.header),
                                          bodyRead: GatewayRuntime.seconds(config.timeouts.body),
                                          idle: GatewayRuntime.seconds(config.timeouts.idle),
                                          tlsHandshake: GatewayRuntime.seconds(config.timeouts.tlsHandshake))
        let http2 = HTTP2Settings(maxConcurrentStreams: config.http2.maxConcurrentStreams,
                                  initialWindowSize: config.http2.initialWindowSize,
                                  maxHeaderListSize: config.http2.maxHeaderListSize)
        var serverConfiguration = HTTPServerConfiguration(
            listeners: listeners, limits: limits, timeouts: timeouts,
            maxConnections: config.limits.maxConnections, http2: http2)
        serverConfiguration.handoverSettle = GatewayRuntime.handoverSettle
        server = HTTPServer(configuration: serverConfiguration, group: group, handler: handler)
        adminHandler = AdminHandler(store: store, metrics: metrics, keys: keys, accessLog: accessLog,
                                    storeHealth: storeHealth, readyRequiresStore: config.readyRequiresStore, reloads: reloads,
                                    jwks: { [tables] in tables.latestTables.verdictTokens?.jwksResponse() },
                                    receiptRefresher: receiptRefresher)
        if let admin = config.admin {
            let adminLoop = EventLoopGroup(loopCount: 1)
            adminGroup = adminLoop
            adminServer = HTTPServer(configuration: HTTPServerConfiguration(listeners: [HTTPListenerConfiguration(GatewayRuntime.listenAddress(admin))]),
                                     group: adminLoop, handler: adminHandler)
        } else {
            adminGroup = nil
            adminServer = nil
        }
    }

    /// The pool of one configured upstream on `group`.
    /// - Throws: `GatewayStartupError` naming the upstream (CA bundle unusable, address unresolvable).
    static func makePool(_ upstream: GatewayConfig.UpstreamConfiguration, group: EventLoopGroup,
                         metrics: GatewayMetrics?,
                         events: (@Sendable (String, [(String, String)]) -> Void)?) throws -> UpstreamPool {
        let explicitName = upstream.tls?.serverNameIsExplicit ?? true
        let endpoints = upstream.endpoints.map { endpoint -> GatewayHTTP.UpstreamConfiguration.Endpoint in
            switch endpoint {
            case .http(let host, let port): return .init(.tcp(host: host, port: port))
            case .https(let host, let port): return .init(.tcp(host: host, port: port), serverName: explicitName ? nil : host)
            case .unix(let path): return .init(.unix(path: path))
            }
        }
        var settings = GatewayHTTP.UpstreamConfiguration(
            name: upstream.name, endpoints: endpoints,
            balance: upstream.balance == .leastRequest ? .leastRequest : .roundRobin,
            ejection: UpstreamEjection(consecutiveErrors: upstream.ejection.consecutiveErrors,
                                       baseTime: GatewayRuntime.seconds(upstream.ejection.baseTime),
                                       maxTime: GatewayRuntime.seconds(upstream.ejection.maxTime)),
            dnsRefresh: GatewayRuntime.seconds(upstream.dnsRefresh),
            healthCheck: upstream.healthCheck.map {
                UpstreamHealthCheck(path: $0.path, interval: GatewayRuntime.seconds($0.interval),
                                    timeout: GatewayRuntime.seconds($0.timeout),
                                    healthyThreshold: $0.healthyThreshold, unhealthyThreshold: $0.unhealthyThreshold)
            },
            connectTimeout: GatewayRuntime.seconds(upstream.connectTimeout),
            responseTimeout: GatewayRuntime.seconds(upstream.responseTimeout),
            maxIdlePerLoop: max(1, upstream.maxIdleConnections / max(1, group.loops.count * endpoints.count)))
        // A malformed upstream response is a 502 with `upstream_bad_response`; the operator also
        // gets its reason, at most one line a second per upstream (`upstream_bad_response`).
        let badResponses = events.map { RateLimitedEvents(sink: $0, now: { EventLoop.now() }) }
        if metrics != nil || badResponses != nil {
            settings.observer = { report in
                metrics?.record(report)
                if case .failed(.upstreamBadResponse) = report.outcome, let badResponses {
                    let detail = report.detail ?? .upstreamBadResponse
                    badResponses.emit("upstream_bad_response", [
                        ("upstream", report.upstream),
                        ("detail", detail == .badRequestLine ? "bad_status_line" : detail.code)])
                }
            }
        }
        if let tls = upstream.tls {
            do {
                let context = try TLSClientContext(settings: TLSClientSettings(verify: tls.verify, caPath: tls.ca))
                settings.tls = (context, tls.serverName)
            } catch {
                throw GatewayStartupError("upstreams.\(upstream.name).tls: \(error)")
            }
        }
        let pool: UpstreamPool
        do {
            pool = try UpstreamPool(settings, group: group, events: events)
        } catch {
            throw GatewayStartupError("upstreams.\(upstream.name): \(error)")
        }
        for problem in pool.problems {
            events?("upstream_unresolved", [("upstream", upstream.name), ("detail", problem),
                                            ("effect", "retrying in the background; requests answer 503 upstream_unresolved while no endpoint resolves")])
        }
        return pool
    }

    /// The TLS server settings of a listener's `tls` mapping.
    static func tlsSettings(_ tls: TLSListenerConfiguration) -> TLSServerSettings {
        TLSServerSettings(
            certificates: tls.certificates.map { TLSServerSettings.Certificate(chainPath: $0.chain, keyPath: $0.key) },
            minVersion: tls.minVersion,
            alpn: GatewayRuntime.alpn)
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
        receiptRefresher?.start()
        return Listeners(data: data, admin: admin)
    }

    /// Graceful stop (SIGTERM): health and readiness turn 503, listeners stop accepting, requests in
    /// flight finish within `timeouts.drain`, then pools, store and loops are released and
    /// `completion` runs (once, on an arbitrary queue).
    public func shutdown(completion: @escaping @Sendable () -> Void) {
        adminHandler.beginDraining()
        receiptRefresher?.stop()
        let grace = GatewayRuntime.seconds(loaded.configuration.timeouts.drain)
        let pools = tables.latestTables.pools.values.map { $0.pool }
        tables.latestTables.verdictTokens?.signers.forEach { $0.stop() }
        let adminServer = self.adminServer
        let store = self.store
        let accessLog = self.accessLog
        let group = self.group
        let adminGroup = self.adminGroup
        server.shutdown(gracePeriod: grace) { [self] in
            // Off the event loops: the last connection to close calls this on its own loop, and
            // `group.shutdown()` waits on every loop's queue (a sync onto the caller's queue traps:
            // SIGILL when SIGTERM came while an admin answer was in flight).
            let finish: @Sendable () -> Void = {
                DispatchQueue.global().async {
                    for pool in pools { pool.shutdown() }
                    store.close()
                    // Bounded: a stalled standard output must not keep the process from exiting.
                    if accessLog?.flush(waitingAtMost: GatewayRuntime.finalFlushWait) == false {
                        self.accessLogUnflushed.store(true, ordering: .relaxed)
                    }
                    group.shutdown()
                    adminGroup?.shutdown()
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
        let wanted = redis.waitReplicas
        redis.evictionPolicy { result in
            let warnings: [String]
            switch result {
            case .success("noeviction"), .success(nil):
                warnings = []
            case .success(let policy?):
                warnings = ["store: Redis maxmemory-policy is \(policy); key records must never be evicted: set maxmemory-policy noeviction"]
            case .failure(let error):
                return completion(["store: Redis is not reachable yet (\(error)); protected routes answer 503 store_unavailable until it is"])
            }
            guard wanted > 0 else { return completion(warnings) }
            // wait_replicas: a primary with fewer replicas refuses (503) every write it is asked to make.
            let policyWarnings = warnings
            redis.connectedReplicas { replicas in
                var all = policyWarnings
                if case .success(let counts) = replicas {
                    for (node, count) in counts where count < wanted {
                        all.append("store: wait_replicas is \(wanted) but the Redis primary \(node) has \(count) connected replicas: "
                                   + "the writes it takes answer 503 store_unavailable until enough replicas are connected")
                    }
                }
                completion(all)
            }
        }
    }

    /// The state of each endpoint of upstream `name` (addresses, ejection, health, load), nil for an
    /// unknown name.
    public func upstreamEndpoints(_ name: String) -> [UpstreamPool.EndpointStatus]? {
        tables.latestTables.pools[name]?.pool.endpointStatus
    }

    /// The counters of upstream `name` (connections, retries, ejections), nil for an unknown name.
    public func upstreamStatistics(_ name: String) -> UpstreamPool.Statistics? {
        tables.latestTables.pools[name]?.pool.statistics
    }

    /// Asks for the buffered access-log lines to be written now, without waiting for the output
    /// (SIGUSR1).
    public func flushLogs() { accessLog?.flushSoon() }

    /// How long a shutdown waits for the last access lines to be written (a stalled output never
    /// holds the exit longer).
    static let finalFlushWait = DispatchTimeInterval.seconds(2)

    /// Whether the shutdown gave up waiting for the last access lines (the output did not take them
    /// within `finalFlushWait`): the `stopped` line says so.
    public var accessLogUnflushedAtStop: Bool { accessLogUnflushed.load(ordering: .relaxed) }

    /// Requests the drain deadline cut so far (for the `stopped` line): they were closed by the
    /// gateway without a complete answer, and their access lines carry `"cut": "drain_deadline"`.
    public var requestsCutByDrain: Int { handler.requestsCutByDrain }

    /// The Prometheus text of `/metrics`.
    public var metricsText: String { metrics.prometheusText() }

    // MARK: - Conversions

    static func makeStore(_ configuration: StoreConfiguration, loops: [EventLoop] = [],
                          onConnectionHealth: (@Sendable (Int, RedisConnectionHealth, String) -> Void)? = nil) throws -> any AttestStore {
        switch configuration.kind {
        case .memory:
            return MemoryStore()
        case .redis(let url):
            var redis = RedisStore.Configuration(url: url)
            redis.commandTimeout = Int(millis(configuration.commandTimeout))
            redis.connectTimeout = Int(millis(configuration.connectTimeout))
            redis.waitReplicas = configuration.waitReplicas
            redis.loops = loops
            redis.onConnectionHealth = onConnectionHealth
            do {
                // `store.tls` (verify: false is warned about by the configuration check, also at start).
                if url.tls, let tls = configuration.tls {
                    redis.tlsContext = try TLSClientContext(settings: RedisStore.tlsSettings(
                        verify: tls.verify, caPath: tls.ca, clientCertificate: tls.certificate.map { ($0.chain, $0.key) }))
                }
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
    /// What went wrong, naming the configuration key: `key.path: message`.
    public let description: String
    init(_ description: String) { self.description = description }

    /// The configuration key path the error starts with (`listen[0].tls`, `trust.extra_roots`,
    /// `upstreams.api`), or empty when it names none.
    public var path: String {
        guard let colon = description.range(of: ": ") else { return "" }
        let head = description[..<colon.lowerBound]
        return head.contains(" ") ? "" : String(head)
    }

    /// The description without its key path.
    public var message: String {
        let path = self.path
        return path.isEmpty ? description : String(description.dropFirst(path.count + 2))
    }
}
