// The part of an upstream pool that lives on one event loop.

import GatewayIO

/// Idle upstream connections of one event loop.
final class UpstreamLoopPool: @unchecked Sendable {  // mutable state confined to `loop.queue`
    struct Settings: Sendable {
        let name: String
        let address: SocketAddress
        let hostHeader: [UInt8]
        let connectTimeout: UInt64
        let responseTimeout: UInt64
        let idleTimeout: UInt64
        let maxIdle: Int
        let limits: HTTP1ParserLimits
        /// TLS for `https://` upstreams (client context and server name), nil for plain.
        let tls: (context: TLSClientContext, serverName: String)?
        /// `UpstreamConfiguration.observer`.
        var observer: (@Sendable (UpstreamExchangeReport) -> Void)? = nil
    }

    let loop: EventLoop
    let settings: Settings
    let counters: UpstreamCounters
    private var idle: [UpstreamConnection] = []
    private var isShutDown = false

    init(loop: EventLoop, settings: Settings, counters: UpstreamCounters) {
        self.loop = loop
        self.settings = settings
        self.counters = counters
    }

    static func nanoseconds(_ seconds: Double) -> UInt64 {
        seconds <= 0 ? 0 : UInt64(min(seconds, 1e9) * 1e9)
    }

    /// A connection for an exchange: the most recently used idle one (when `allowIdle`), else a new one.
    func acquire(allowIdle: Bool) -> Result<UpstreamConnection, HTTPError> {
        if isShutDown { return .failure(.upstreamUnavailable) }
        if allowIdle, let connection = idle.popLast() {
            counters.reused.add(1, ordering: .relaxed)
            return .success(connection)
        }
        let result = UpstreamConnection.open(pool: self)
        if case .success = result { counters.opened.add(1, ordering: .relaxed) }
        return result
    }

    /// Takes back a connection whose exchange completed cleanly; closes it when the pool is full.
    func release(_ connection: UpstreamConnection) {
        if isShutDown || idle.count >= settings.maxIdle {
            connection.close()
            return
        }
        idle.append(connection)
        connection.becameIdle()
    }

    /// Forgets an idle connection that closed.
    func remove(_ connection: UpstreamConnection) {
        if let i = idle.firstIndex(where: { $0 === connection }) { idle.remove(at: i) }
    }

    func shutdown() {
        isShutDown = true
        let connections = idle
        idle.removeAll()
        for c in connections { c.close() }
    }
}
