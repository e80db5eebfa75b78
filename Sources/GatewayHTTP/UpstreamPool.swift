// Keep-alive connection pool for one upstream, one sub-pool per event loop.

import GatewayIO
import Synchronization

/// A keep-alive HTTP/1.1 connection pool to one upstream (TCP or Unix socket) with one or more
/// endpoints.
///
/// Idle connections are kept per event loop and endpoint (at most `maxIdlePerLoop` each), so an
/// exchange runs entirely on the loop of the downstream connection that forwards it. An idle
/// connection that the upstream closes is noticed (its read source fires) and dropped; one idle
/// longer than `idleTimeout` is closed.
///
/// Endpoints: each exchange picks an available endpoint (`UpstreamBalance`); an endpoint is taken out
/// after consecutive connect errors (`UpstreamEjection`) or failed health checks
/// (`UpstreamHealthCheck`); DNS names are resolved off the event loops, at creation and then every
/// `dnsRefresh` seconds (an unresolved name is retried every second, backing off to `dnsRefresh`).
///
/// Failures, answered downstream by the proxy (unless the response head was already sent, in which
/// case the downstream connection is closed to signal the truncation):
/// - 502 `upstream_unavailable`: connect refused / no such socket / unreachable on every endpoint
///   tried / pool shut down;
/// - 503 `upstream_unresolved`: no endpoint has an address (DNS names that do not resolve);
/// - 502 `upstream_reset`: the upstream reset or closed before the response was complete;
/// - 502 `upstream_bad_response`: a malformed response (see `HTTP1ResponseParser`);
/// - 504 `upstream_connect_timeout`, 504 `upstream_timeout` (see `UpstreamConfiguration`).
///
/// Retry rules: a failed connect is retried on another endpoint (nothing was sent), each endpoint
/// once at most. An exchange is retried once more, on a fresh connection, when it ran on a reused
/// pooled connection, the failure is a reset or close, no response byte had arrived, and either no
/// request byte could be written or the method is idempotent (RFC 9110 section 9.2.2: GET, HEAD,
/// PUT, DELETE, OPTIONS, TRACE) and the serialized request (head and body) is at most
/// `UpstreamExchange.retryBufferBytes` (64 KiB: only such a request is kept once written, Envoy's
/// retry-buffer rule). A POST that reached a pooled connection which then closed is never re-sent
/// (RFC 9112 section 9.3.1), nor a larger PUT.
public final class UpstreamPool: Sendable {
    /// The configuration it was created with.
    public let configuration: UpstreamConfiguration
    let groupID: ObjectIdentifier
    let loopPools: [UpstreamLoopPool]
    let counters = UpstreamCounters()
    let endpoints: [UpstreamEndpointState]
    let events: (@Sendable (String, [(String, String)]) -> Void)?
    let resolver: UpstreamResolver?
    /// Active health checks (on one loop), nil without.
    let healthChecker: UpstreamHealthChecker?

    /// Errors creating a pool.
    public enum Failure: Error, CustomStringConvertible {
        /// A Unix path is too long (a DNS name that does not resolve is no error: see `problems`).
        case badAddress(String)

        /// The reason, for logs.
        public var description: String {
            switch self { case .badAddress(let m): return m }
        }
    }

    /// Creates the pool on `group` (the group of the servers that forward to it). IP literals and Unix
    /// paths are used at once; DNS names are resolved now, off the event loops (blocking the caller:
    /// call at startup), and then again in the background. A name that does not resolve leaves its
    /// endpoint without address (listed in `problems`), retried in the background; no endpoint with
    /// an address answers 503 `upstream_unresolved`.
    /// - Parameter events: lifecycle events (`upstream_endpoint_ejected`, `upstream_resolved`,
    ///   `upstream_unresolved`, `upstream_endpoint_down`, `upstream_endpoint_up`) with their fields.
    /// - Throws: `Failure.badAddress` when a Unix path is too long.
    public init(_ configuration: UpstreamConfiguration, group: EventLoopGroup,
                events: (@Sendable (String, [(String, String)]) -> Void)? = nil) throws {
        self.configuration = configuration
        self.events = events
        groupID = group.id
        var states: [UpstreamEndpointState] = []
        var names: [UpstreamEndpointState] = []
        var problems: [String] = []
        for (i, endpoint) in configuration.endpoints.enumerated() {
            let serverName = configuration.tls.map { endpoint.serverName ?? $0.serverName }
            let state = UpstreamEndpointState(index: i, endpoint: endpoint.address, serverName: serverName)
            switch endpoint.address {
            case .tcp(let host, let port):
                if let literal = SocketAddress.literal(host: host, port: port) {
                    state.setAddresses([literal])
                } else {
                    names.append(state)
                    do {
                        state.setAddresses(try SocketAddress.resolveAll(host: host, port: port))
                    } catch {
                        problems.append("\(endpoint.address): \(error)")
                    }
                }
            case .unix(let path):
                do {
                    state.setAddresses([try SocketAddress.unix(path: path)])
                } catch {
                    throw Failure.badAddress("\(error)")
                }
            }
            states.append(state)
        }
        endpoints = states
        self.problems = problems
        let defaultHost: String
        switch configuration.endpoints[0].address {
        case .tcp(let host, let port):
            let h = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
            defaultHost = port == 80 ? h : "\(h):\(port)"
        case .unix:
            defaultHost = "localhost"
        }
        var settings = UpstreamLoopPool.Settings(
            name: configuration.name,
            hostHeader: Array((configuration.hostHeader ?? defaultHost).utf8),
            connectTimeout: UpstreamLoopPool.nanoseconds(configuration.connectTimeout),
            responseTimeout: UpstreamLoopPool.nanoseconds(configuration.responseTimeout),
            idleTimeout: UpstreamLoopPool.nanoseconds(configuration.idleTimeout),
            maxIdle: max(0, configuration.maxIdlePerLoop),
            limits: configuration.limits,
            tlsContext: configuration.tls?.context,
            balance: configuration.balance,
            ejection: configuration.ejection)
        settings.observer = configuration.observer
        let shared = UpstreamShared(counters: counters, endpoints: states, name: configuration.name, events: events)
        loopPools = group.loops.map { UpstreamLoopPool(loop: $0, settings: settings, shared: shared) }
        resolver = names.isEmpty ? nil
            : UpstreamResolver(upstream: configuration.name, endpoints: names, refresh: configuration.dnsRefresh, events: events)
        resolver?.start()
        if let check = configuration.healthCheck, !loopPools.isEmpty {
            // One loop checks every endpoint of this upstream; upstreams spread over the loops.
            let home = loopPools[Int(UInt(bitPattern: configuration.name.hashValue) % UInt(loopPools.count))]
            let checker = UpstreamHealthChecker(pool: home, check: check, host: settings.hostHeader)
            healthChecker = checker
            home.loop.execute { checker.start() }
        } else {
            healthChecker = nil
        }
    }

    /// What went wrong at creation without preventing it (DNS names that did not resolve), one
    /// sentence each; the running gateway logs them as warnings and keeps retrying.
    public let problems: [String]

    /// Closes idle connections and makes later forwards fail with 502 `upstream_unavailable`;
    /// stops re-resolving and health checks. Exchanges in progress finish. Returns at once.
    public func shutdown() {
        resolver?.stop()
        if let checker = healthChecker, let home = checker.home { home.execute { checker.stop() } }
        for pool in loopPools { pool.loop.execute { pool.shutdown() } }
    }

    /// Counters since creation (for metrics and tests).
    public struct Statistics: Sendable, Equatable {
        /// Connections opened to the upstream.
        public var connectionsOpened: Int
        /// Exchanges that ran on a reused pooled connection.
        public var reusedExchanges: Int
        /// Exchanges retried on a fresh connection after a stale pooled one failed.
        public var retries: Int
        /// Exchanges retried on another endpoint after a failed connect.
        public var connectRetries: Int = 0
        /// Endpoint ejections after connect errors.
        public var ejections: Int = 0
    }

    /// Current counters.
    public var statistics: Statistics {
        Statistics(connectionsOpened: counters.opened.load(ordering: .relaxed),
                   reusedExchanges: counters.reused.load(ordering: .relaxed),
                   retries: counters.retries.load(ordering: .relaxed),
                   connectRetries: counters.connectRetries.load(ordering: .relaxed),
                   ejections: counters.ejections.load(ordering: .relaxed))
    }

    /// The state of one endpoint now.
    public struct EndpointStatus: Sendable, Equatable {
        /// As configured (`host:port`, `unix:/path`).
        public var endpoint: String
        /// The addresses it resolves to now (empty: unresolved).
        public var addresses: [String]
        /// Whether it takes requests now (resolved, not ejected, healthy).
        public var available: Bool
        /// Ejected after connect errors, for now.
        public var ejected: Bool
        /// The active health-check verdict (true without health checks).
        public var healthy: Bool
        /// Exchanges in progress on it.
        public var active: Int
    }

    /// Every endpoint's state, in configuration order.
    public var endpointStatus: [EndpointStatus] {
        let now = EventLoop.now()
        return endpoints.map { e in
            EndpointStatus(endpoint: e.label, addresses: e.resolvedAddresses.map(\.description), available: e.isAvailable(now: now),
                           ejected: e.isEjected(now: now), healthy: e.isHealthy, active: e.active.load(ordering: .relaxed))
        }
    }
}

/// Relaxed counters shared by the per-loop pools.
final class UpstreamCounters: Sendable {
    let opened = Atomic<Int>(0)
    let reused = Atomic<Int>(0)
    let retries = Atomic<Int>(0)
    let connectRetries = Atomic<Int>(0)
    let ejections = Atomic<Int>(0)
}

/// What the per-loop pools of one upstream share: counters, endpoints, the event sink.
final class UpstreamShared: Sendable {
    let counters: UpstreamCounters
    let endpoints: [UpstreamEndpointState]
    let name: String
    let events: (@Sendable (String, [(String, String)]) -> Void)?

    init(counters: UpstreamCounters, endpoints: [UpstreamEndpointState], name: String,
         events: (@Sendable (String, [(String, String)]) -> Void)?) {
        self.counters = counters
        self.endpoints = endpoints
        self.name = name
        self.events = events
    }
}
