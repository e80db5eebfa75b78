// State shared by a server's listeners and connections.

import GatewayIO
import Synchronization

/// What every connection of one server shares: the handler's calls, configuration, connection
/// settings, connection accounting for graceful shutdown. What the server, its listeners and its
/// shutdown use.
final class HTTPServerContext: @unchecked Sendable {  // immutable, or atomics and mutexes
    /// The handler, as the connections call it (`HTTPHandlerCalls`: its context boxed, its type erased).
    let handler: HTTPHandlerCalls
    let configuration: HTTPServerConfiguration
    /// What every connection's `HTTP1ConnectionMachine` is set up with (limits, timeouts in ns).
    let connectionSettings: HTTP1ConnectionMachine.Settings
    /// The TLS handshake deadline of TLS listeners, in nanoseconds (0: none).
    let tlsHandshakeTimeout: UInt64
    // The downstream timeouts in nanoseconds (0: none), for the HTTP/2 connections.
    var headerTimeout: UInt64 { connectionSettings.headerTimeout }
    var bodyTimeout: UInt64 { connectionSettings.bodyTimeout }
    var idleTimeout: UInt64 { connectionSettings.idleTimeout }
    var writeTimeout: UInt64 { connectionSettings.writeTimeout }
    var lingerTimeout: UInt64 { connectionSettings.lingerTimeout }
    private let draining = Atomic<Bool>(false)
    private let nextConnectionID = Atomic<UInt64>(1)
    private let accounting = Mutex<Accounting>(Accounting())

    private struct Accounting {
        var live = 0
        var completions: [@Sendable () -> Void] = []
        var shutdownStarted = false
    }

    init(configuration: HTTPServerConfiguration, handler: HTTPHandlerCalls) {
        self.handler = handler
        self.configuration = configuration
        connectionSettings = HTTP1ConnectionMachine.Settings(configuration)
        tlsHandshakeTimeout = HTTP1ConnectionMachine.Settings.nanoseconds(configuration.timeouts.tlsHandshake)
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

    /// Marks the server draining (connections drain, new ones serve one request), before
    /// `beginDraining` registers the completion once the listeners are closed.
    func markDraining() {
        draining.store(true, ordering: .relaxed)
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
