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
    #if DEBUG
    /// Debug builds: this server's HTTP/1.1 connections and HTTP/2 streams still alive (an upstream
    /// exchange holds its sink strongly until it finishes; tests check that nothing is kept after close).
    let liveSinks = LiveObjectCount()
    /// Debug builds: this server's HTTP/2 connections still alive (work queued for the end of a loop
    /// turn holds its connection strongly until it runs; tests check that none is kept after close).
    let liveHTTP2Connections = LiveObjectCount()
    #endif
    private let nextConnectionID = Atomic<UInt64>(1)
    private let accounting = Mutex<Accounting>(Accounting())

    private struct Accounting {
        var live = 0
        /// Live connections per event loop (index = `EventLoop.index`).
        var perLoop: [Int] = []
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

    /// Takes a place for a connection about to be accepted (`maxConnections` counted exactly, however
    /// many loops accept at once) and chooses its event loop: `preferred` (the loop that accepts it,
    /// no hand-over between threads) unless that loop has more than `slack` connections above the
    /// least loaded loop, which then gets it (a burst of new connections, e.g. a load generator's
    /// keep-alive pool, is spread over the loops as round-robin would).
    /// - Parameters:
    ///   - preferred: index of the accepting loop (any index when it is not a loop: `loops` of them).
    ///   - loops: loops in the group.
    /// - Returns: the chosen loop's index, or nil at `maxConnections` (nothing taken).
    func reserveConnection(preferred: Int, loops: Int) -> Int? {
        let limit = configuration.maxConnections
        return accounting.withLock { a in
            if limit > 0 && a.live >= limit { return nil }
            if a.perLoop.count < loops { a.perLoop += [Int](repeating: 0, count: loops - a.perLoop.count) }
            var chosen = min(max(0, preferred), loops - 1)
            var least = 0
            for i in 1..<loops where a.perLoop[i] < a.perLoop[least] { least = i }
            let slack = max(2, a.perLoop[least] / 8)
            if a.perLoop[chosen] > a.perLoop[least] + slack { chosen = least }
            a.live += 1
            a.perLoop[chosen] += 1
            return chosen
        }
    }

    /// Gives back a place `reserveConnection` took when no connection was accepted after all.
    func cancelReservation(loop: Int) {
        connectionClosed(loop: loop)
    }

    /// Whether another connection may be accepted now (`maxConnections` not reached).
    var hasCapacity: Bool {
        let limit = configuration.maxConnections
        return limit <= 0 || accounting.withLock { $0.live } < limit
    }

    /// A connection of loop `loop` (its `EventLoop.index`) is gone.
    func connectionClosed(loop: Int) {
        let completions: [@Sendable () -> Void] = accounting.withLock { a in
            a.live -= 1
            if loop >= 0 && loop < a.perLoop.count { a.perLoop[loop] -= 1 }
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
