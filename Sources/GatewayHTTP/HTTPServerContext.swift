// State shared by a server's listeners and connections.

import GatewayIO
import Synchronization

/// What every connection of one server shares: configuration, handler, timeouts in nanoseconds,
/// connection accounting for graceful shutdown.
final class HTTPServerContext: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let headerTimeout: UInt64
    let bodyTimeout: UInt64
    let idleTimeout: UInt64
    let writeTimeout: UInt64
    let lingerTimeout: UInt64
    let tlsHandshakeTimeout: UInt64
    private let draining = Atomic<Bool>(false)
    private let nextConnectionID = Atomic<UInt64>(1)
    private let accounting = Mutex<Accounting>(Accounting())

    private struct Accounting {
        var live = 0
        var completions: [@Sendable () -> Void] = []
        var shutdownStarted = false
    }

    init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        func ns(_ s: Double) -> UInt64 { s <= 0 ? 0 : UInt64(min(s, 1e9) * 1e9) }
        headerTimeout = ns(configuration.timeouts.headerRead)
        bodyTimeout = ns(configuration.timeouts.bodyRead)
        idleTimeout = ns(configuration.timeouts.idle)
        writeTimeout = ns(configuration.timeouts.write)
        lingerTimeout = ns(configuration.timeouts.linger)
        tlsHandshakeTimeout = ns(configuration.timeouts.tlsHandshake)
    }

    var isDraining: Bool { draining.load(ordering: .relaxed) }

    func makeConnectionID() -> UInt64 { nextConnectionID.wrappingAdd(1, ordering: .relaxed).oldValue }

    func connectionOpened() {
        accounting.withLock { $0.live += 1 }
    }

    /// Whether another connection may be accepted now (`maxConnections` not reached).
    var hasCapacity: Bool {
        let limit = configuration.maxConnections
        return limit <= 0 || accounting.withLock { $0.live } < limit
    }

    func connectionClosed() {
        let completions: [@Sendable () -> Void] = accounting.withLock { a in
            a.live -= 1
            guard a.shutdownStarted && a.live == 0 else { return [] }
            defer { a.completions = [] }
            return a.completions
        }
        for c in completions { c() }
    }

    /// Marks the server draining; `completion` runs once no connection is left (maybe right now).
    func beginDraining(_ completion: @escaping @Sendable () -> Void) {
        draining.store(true, ordering: .relaxed)
        let runNow: Bool = accounting.withLock { a in
            a.shutdownStarted = true
            if a.live == 0 { return true }
            a.completions.append(completion)
            return false
        }
        if runNow { completion() }
    }
}
