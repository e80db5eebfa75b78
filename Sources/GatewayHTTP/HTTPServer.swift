// The HTTP/1.1 server: listeners, event loops, graceful shutdown.

import GatewayIO
import Dispatch
import Synchronization

/// An HTTP/1.1 and HTTP/2 server on Dispatch event loops that hands requests to an `HTTPHandler` and
/// proxies them upstream on its instruction.
///
///     let group = EventLoopGroup()
///     let server = HTTPServer(configuration: .init(listeners: [.tcp(host: "127.0.0.1", port: 0)]),
///                             group: group, handler: handler)
///     let listeners = try server.start()          // listeners[0].port is the bound port
///     ...
///     server.shutdown(gracePeriod: 10) { print("drained") }
///
/// Every loop of the group accepts new connections on its own thread (`HTTPLoopAcceptor`: the
/// listening socket in each loop's epoll set with `EPOLLEXCLUSIVE`), and a connection lives on the
/// loop that accepted it unless that loop is well above the least loaded one (no thread per
/// connection, no blocking I/O, no hop between threads per connection).
/// Behaviour per request: RFC 9112 / RFC 9110 as documented on `HTTP1RequestParser`,
/// `HTTPHandler`, `HTTPForward` and `UpstreamPool`.
///
/// Protocols: a plain listener speaks HTTP/1.1 and HTTP/2 with prior knowledge (h2c, RFC 9113
/// section 3.3): a connection whose first bytes are the client preface `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`
/// becomes an `HTTP2ServerConnection` (nghttp2), every stream handled through the same
/// `HTTPHandler` as an HTTP/1.1 request (`HTTP2Settings` for its limits). `Upgrade: h2c` is never
/// performed. A TLS listener (`HTTPListenerConfiguration.tls`) runs the handshake on the loop
/// (`TLSHandshakeConnection`) and selects the protocol by ALPN: `h2` or HTTP/1.1.
public final class HTTPServer: Sendable {
    /// The configuration it was created with.
    public let configuration: HTTPServerConfiguration
    /// The event loops its connections run on.
    public let group: EventLoopGroup
    /// The shared state of its connections, the handler's calls included.
    let context: HTTPServerContext
    private let acceptQueue = DispatchQueue(label: "attest-gateway.accept", qos: .userInitiated)
    private let listeners = Mutex<[HTTPListener]>([])

    /// A server (not yet listening) whose connections call `handler`, any `HTTPHandler` type.
    ///
    /// Inlinable: the handler's calls (`HTTPHandlerCalls`) are compiled in the caller's module for
    /// the concrete handler type, so that neither they nor the connections run generic code per
    /// request; the handler's `RequestContext` reaches it typed.
    @inlinable
    public convenience init<Handler: HTTPHandler>(configuration: HTTPServerConfiguration, group: EventLoopGroup,
                                                  handler: Handler) {
        self.init(configuration: configuration, group: group, calls: HTTPHandlerCalls(handler))
    }

    /// A server whose connections make `calls`.
    @usableFromInline
    init(configuration: HTTPServerConfiguration, group: EventLoopGroup, calls: HTTPHandlerCalls) {
        self.configuration = configuration
        self.group = group
        context = HTTPServerContext(configuration: configuration, handler: calls)
    }

    /// Binds every configured listener and starts accepting.
    /// - Returns: the bound listeners, in configuration order (with the real port when 0 was asked).
    /// - Throws: when an address cannot be resolved or bound (nothing stays bound then), or when
    ///   called twice.
    @discardableResult
    public func start() throws -> [HTTPBoundListener] {
        var bound: [HTTPListener] = []
        do {
            guard listeners.withLock({ $0.isEmpty }) else {
                throw Socket.Failure(call: "start: already started", errno: 114)  // EALREADY
            }
            for listener in configuration.listeners {
                bound.append(try HTTPListener(listener.endpoint, tls: listener.tls, backlog: configuration.backlog,
                                              unixPermissions: configuration.unixSocketPermissions,
                                              proxyProtocol: listener.proxyProtocol))
            }
        } catch {
            for l in bound { l.close() }
            throw error
        }
        listeners.withLock { $0 = bound }
        let group = self.group
        acceptQueue.sync {
            for l in bound { l.start(queue: acceptQueue, context: context, group: group) }
        }
        return bound.map(\.boundListener)
    }

    /// The bound listeners (empty before `start()`).
    public var boundListeners: [HTTPBoundListener] {
        listeners.withLock { $0.map(\.boundListener) }
    }

    /// Graceful shutdown: stops accepting at once, closes idle keep-alive connections, lets requests
    /// in flight finish (answered with `Connection: close`), force-closes what is left after
    /// `gracePeriod` seconds, then calls `completion` (once, on an arbitrary queue).
    ///
    /// With `configuration.handoverSettle` above 0 the listeners first steer new connections to a
    /// newer process sharing their addresses (`SO_REUSEPORT`, see `HTTPListener.steerToSuccessor`),
    /// keep accepting for that long (connections accepted meanwhile serve one request), then close.
    public func shutdown(gracePeriod: Double = 30, completion: @escaping @Sendable () -> Void) {
        let context = self.context
        let group = self.group
        let settle = max(0, min(configuration.handoverSettle, gracePeriod))
        acceptQueue.async { [self] in
            let open = listeners.withLock({ $0 })
            if settle > 0 {
                context.markDraining()
                for l in open { l.steerToSuccessor() }
                acceptQueue.asyncAfter(deadline: .now() + .nanoseconds(Int(settle * 1e9))) {
                    for l in open { l.acceptRemaining() }
                    for l in open { l.close() }
                    context.beginDraining(completion)
                }
            } else {
                for l in open { l.close() }
                context.beginDraining(completion)
            }
            for loop in group.loops {
                loop.execute {
                    for case let c as any DownstreamConnection in loop.allResidents where c.server === context { c.drain() }
                }
                loop.queue.asyncAfter(deadline: .now() + .nanoseconds(Int(max(0, min(gracePeriod, 1e6)) * 1e9))) {
                    for case let c as any DownstreamConnection in loop.allResidents where c.server === context {
                        c.forceClose()
                    }
                }
            }
        }
    }
}
