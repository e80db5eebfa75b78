// Keep-alive connection pool for one upstream, one sub-pool per event loop.

import GatewayIO
import Synchronization

/// A keep-alive HTTP/1.1 connection pool to one upstream (TCP or Unix socket).
///
/// Idle connections are kept per event loop (at most `maxIdlePerLoop` each), so an exchange runs
/// entirely on the loop of the downstream connection that forwards it. An idle connection that the
/// upstream closes is noticed (its read source fires) and dropped; one idle longer than `idleTimeout`
/// is closed.
///
/// Failures, answered downstream by the proxy (unless the response head was already sent, in which
/// case the downstream connection is closed to signal the truncation):
/// - 502 `upstream_unavailable`: connect refused / no such socket / unreachable / pool shut down;
/// - 502 `upstream_reset`: the upstream reset or closed before the response was complete;
/// - 502 `upstream_bad_response`: a malformed response (see `HTTP1ResponseParser`);
/// - 504 `upstream_connect_timeout`, 504 `upstream_timeout` (see `UpstreamConfiguration`).
///
/// Retry rule (stale pooled connections): an exchange is retried once, on a fresh connection, only
/// when it ran on a reused pooled connection, the failure is a reset or close, no response byte had
/// arrived, and either no request byte could be written or the method is idempotent
/// (RFC 9110 section 9.2.2: GET, HEAD, PUT, DELETE, OPTIONS, TRACE). A POST that reached a
/// pooled connection which then closed is never re-sent (RFC 9112 section 9.3.1).
public final class UpstreamPool: Sendable {
    /// The configuration it was created with.
    public let configuration: UpstreamConfiguration
    let groupID: ObjectIdentifier
    let loopPools: [UpstreamLoopPool]
    let counters = UpstreamCounters()

    /// Errors creating a pool.
    public enum Failure: Error, CustomStringConvertible {
        /// The host could not be resolved or the Unix path is too long.
        case badAddress(String)

        /// The reason, for logs.
        public var description: String {
            switch self { case .badAddress(let m): return m }
        }
    }

    /// Creates the pool on `group` (the group of the servers that forward to it). Resolves a TCP host
    /// name now (blocking: call at startup).
    /// - Throws: `Failure.badAddress` when the address cannot be resolved.
    public init(_ configuration: UpstreamConfiguration, group: EventLoopGroup) throws {
        self.configuration = configuration
        groupID = group.id
        let address: SocketAddress
        let defaultHost: String
        do {
            switch configuration.address {
            case .tcp(let host, let port):
                address = try SocketAddress.resolve(host: host, port: port, passive: false)
                let h = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
                defaultHost = port == 80 ? h : "\(h):\(port)"
            case .unix(let path):
                address = try SocketAddress.unix(path: path)
                defaultHost = "localhost"
            }
        } catch {
            throw Failure.badAddress("\(error)")
        }
        var settings = UpstreamLoopPool.Settings(
            name: configuration.name,
            address: address,
            hostHeader: Array((configuration.hostHeader ?? defaultHost).utf8),
            connectTimeout: UpstreamLoopPool.nanoseconds(configuration.connectTimeout),
            responseTimeout: UpstreamLoopPool.nanoseconds(configuration.responseTimeout),
            idleTimeout: UpstreamLoopPool.nanoseconds(configuration.idleTimeout),
            maxIdle: max(0, configuration.maxIdlePerLoop),
            limits: configuration.limits,
            tls: configuration.tls)
        settings.observer = configuration.observer
        let counters = self.counters
        loopPools = group.loops.map { UpstreamLoopPool(loop: $0, settings: settings, counters: counters) }
    }

    /// Closes idle connections and makes later forwards fail with 502 `upstream_unavailable`.
    /// Exchanges in progress finish. Returns at once.
    public func shutdown() {
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
    }

    /// Current counters.
    public var statistics: Statistics {
        Statistics(connectionsOpened: counters.opened.load(ordering: .relaxed),
                   reusedExchanges: counters.reused.load(ordering: .relaxed),
                   retries: counters.retries.load(ordering: .relaxed))
    }
}

/// Relaxed counters shared by the per-loop pools.
final class UpstreamCounters: Sendable {
    let opened = Atomic<Int>(0)
    let reused = Atomic<Int>(0)
    let retries = Atomic<Int>(0)
}
