// The part of an upstream pool that lives on one event loop.

import GatewayIO

/// Idle upstream connections of one event loop, per endpoint, and the loop's endpoint picks.
final class UpstreamLoopPool: @unchecked Sendable {  // mutable state confined to `loop.queue`
    struct Settings: Sendable {
        let name: String
        let hostHeader: [UInt8]
        let connectTimeout: UInt64
        let responseTimeout: UInt64
        let idleTimeout: UInt64
        let maxIdle: Int
        let limits: HTTP1ParserLimits
        /// TLS for `https://` upstreams (the client context; server names per endpoint), nil for plain.
        let tlsContext: TLSClientContext?
        let balance: UpstreamBalance
        let ejection: UpstreamEjection
        /// `UpstreamConfiguration.observer`.
        var observer: (@Sendable (UpstreamExchangeReport) -> Void)? = nil
    }

    let loop: EventLoop
    let settings: Settings
    let shared: UpstreamShared
    var counters: UpstreamCounters { shared.counters }
    var endpoints: [UpstreamEndpointState] { shared.endpoints }
    /// Idle connections per endpoint. Release builds drop its run-time exclusivity check
    /// (`@exclusivity(unchecked)`; debug builds keep it): touched only on `loop.queue`, each access a
    /// leaf (append, pop, filter; no call out while it lasts). bench/PERFORMANCE.md "Seventh pass".
    #if DEBUG
    private var idle: [[UpstreamConnection]]
    #else
    @exclusivity(unchecked) private var idle: [[UpstreamConnection]]
    #endif
    private var cursor = 0
    private var isShutDown = false

    init(loop: EventLoop, settings: Settings, shared: UpstreamShared) {
        self.loop = loop
        self.settings = settings
        self.shared = shared
        idle = Array(repeating: [], count: shared.endpoints.count)
        cursor = loop.index  // loops start at different endpoints
    }

    /// The endpoints an exchange has tried (indexes into the upstream's endpoint list): a bit set
    /// for the first 64, a list beyond, so the usual exchange allocates nothing for it.
    struct Tried {
        private var bits: UInt64 = 0
        private var beyond: [Int] = []
        /// Endpoints tried.
        private(set) var count = 0

        /// Whether none was tried.
        var isEmpty: Bool { count == 0 }

        /// Whether endpoint `index` was tried.
        func contains(_ index: Int) -> Bool {
            index < 64 ? bits & (1 &<< UInt64(index)) != 0 : beyond.contains(index)
        }

        /// Records endpoint `index` (once).
        mutating func insert(_ index: Int) {
            guard !contains(index) else { return }
            if index < 64 { bits |= 1 &<< UInt64(index) } else { beyond.append(index) }
            count += 1
        }

        /// Forgets every endpoint.
        mutating func removeAll() {
            bits = 0
            beyond = []
            count = 0
        }
    }

    static func nanoseconds(_ seconds: Double) -> UInt64 {
        seconds <= 0 ? 0 : UInt64(min(seconds, 1e9) * 1e9)
    }

    /// The endpoint for the next exchange, skipping `tried`: an available one by the balancing
    /// policy; when none is available, any resolved one (panic); nil when none is resolved.
    func pick(excluding tried: Tried) -> Int? {
        let all = shared.endpoints
        let count = all.count
        if count == 1 { return tried.isEmpty && all[0].isResolved ? 0 : nil }
        let now = EventLoop.now()
        let start = cursor
        cursor = cursor &+ 1
        var chosen: Int?
        var fewest = Int.max
        var fallback: Int?
        for k in 0..<count {
            let i = (start &+ k) % count
            let e = all[i]
            if tried.contains(i) || !e.isResolved { continue }
            if fallback == nil { fallback = i }
            guard e.isAvailable(now: now) else { continue }
            switch settings.balance {
            case .roundRobin:
                cursor = i &+ 1  // the next pick starts after this one: skipped endpoints give no one a double share
                return i
            case .leastRequest:
                let load = e.active.load(ordering: .relaxed)
                if load < fewest {
                    fewest = load
                    chosen = i
                }
            }
        }
        return chosen ?? fallback
    }

    /// A connection for an exchange on an endpoint not in `tried` (appended to it): the most
    /// recently used idle one of the picked endpoint (when `allowIdle`), else a new one. A connect
    /// that fails at once counts against its endpoint and the next endpoint is tried.
    func acquire(allowIdle: Bool, tried: inout Tried, connectTimeout: UInt64) -> Result<UpstreamConnection, HTTPError> {
        if isShutDown { return .failure(.upstreamUnavailable) }
        var failure = HTTPError.upstreamUnresolved
        while let index = pick(excluding: tried) {
            tried.insert(index)
            if allowIdle, let connection = idle[index].popLast() {
                counters.reused.add(1, ordering: .relaxed)
                return .success(connection)
            }
            let endpoint = shared.endpoints[index]
            guard let address = endpoint.nextAddress() else { continue }
            switch UpstreamConnection.open(pool: self, endpoint: endpoint, address: address, connectTimeout: connectTimeout) {
            case .success(let connection):
                counters.opened.add(1, ordering: .relaxed)
                return .success(connection)
            case .failure(let error):
                connectFailed(endpoint)
                failure = error
                if tried.count < shared.endpoints.count { counters.connectRetries.add(1, ordering: .relaxed) }
            }
        }
        if failure == .upstreamUnresolved && tried.isEmpty == false { failure = .upstreamUnavailable }
        return .failure(failure)
    }

    /// A fresh connection to endpoint `index` whatever its state (health checks); a connect that
    /// fails at once counts against it.
    func acquire(endpoint index: Int, connectTimeout: UInt64) -> Result<UpstreamConnection, HTTPError> {
        if isShutDown { return .failure(.upstreamUnavailable) }
        let endpoint = shared.endpoints[index]
        guard let address = endpoint.nextAddress() else { return .failure(.upstreamUnresolved) }
        let result = UpstreamConnection.open(pool: self, endpoint: endpoint, address: address, connectTimeout: connectTimeout)
        if case .failure = result { connectFailed(endpoint) }
        return result
    }

    /// Records a failed connect on `endpoint` (ejects it at the threshold, with an event).
    func connectFailed(_ endpoint: UpstreamEndpointState) {
        guard let seconds = endpoint.connectFailed(now: EventLoop.now(), policy: settings.ejection) else { return }
        counters.ejections.add(1, ordering: .relaxed)
        shared.events?("upstream_endpoint_ejected", [("upstream", settings.name), ("endpoint", endpoint.label),
                                                     ("seconds", String(Int(seconds.rounded(.up))))])
    }

    /// Takes back a connection whose exchange completed cleanly at `now` (monotonic nanoseconds, the
    /// start of its idle timeout); closes it when the pool is full.
    func release(_ connection: UpstreamConnection, now: UInt64) {
        let i = connection.endpoint.index
        if isShutDown || idle[i].count >= settings.maxIdle {
            connection.close()
            return
        }
        idle[i].append(connection)
        connection.becameIdle(now: now)
    }

    /// Forgets an idle connection that closed.
    func remove(_ connection: UpstreamConnection) {
        let i = connection.endpoint.index
        if let j = idle[i].firstIndex(where: { $0 === connection }) { idle[i].remove(at: j) }
    }

    func shutdown() {
        isShutDown = true
        let connections = idle.flatMap { $0 }
        idle = Array(repeating: [], count: idle.count)
        for c in connections { c.close() }
    }
}
