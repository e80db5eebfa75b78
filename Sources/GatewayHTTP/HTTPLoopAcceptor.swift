// One event loop's share of a listening socket: the loop accepts on its own thread.

import GatewayIO
import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Accepts new connections of one `HTTPListener` on one event loop, as nginx's workers do: the loop
/// watches the listening socket (its own `dup` of it, registered with `EPOLLEXCLUSIVE` so that a new
/// connection wakes one waiting loop, not every loop) and accepts on its own thread, so a connection
/// starts on the loop that accepted it without a hop between threads.
///
/// The hop this replaces (a Dispatch read source on an accept queue, then `EventLoop.execute` per
/// connection) woke two Dispatch worker threads per connection: about 90 us of CPU per connection on
/// the 2-core benchmark machine, more than the connection's own request (bench/PERFORMANCE.md, "Eighth pass").
///
/// A loop keeps a connection unless it holds more than a few connections above the least loaded loop
/// (`HTTPServerContext.reserveConnection`): then the least loaded loop gets it through `execute`, so
/// a burst of new connections is still spread over the loops. At `maxConnections` (counted exactly,
/// places are taken before `accept`) and when out of descriptors, the loop stops watching the socket
/// and looks again after 50 ms (100 ms) on its own queue; new connections wait in the backlog.
///
/// Made on the server's accept queue (`HTTPListener.start`), then confined to its loop's queue: started,
/// run and closed there (`start` is queued before `close`, so it always runs first).
final class HTTPLoopAcceptor: @unchecked Sendable {  // state confined to `loop.queue`
    let loop: EventLoop
    /// Held until `close()` (the listener holds its acceptors: the cycle ends there), so a connection
    /// accepted while the listener is being closed still finds it.
    private var listener: HTTPListener?
    private let context: HTTPServerContext
    private let group: EventLoopGroup
    private var channel: SocketChannel?
    private var paused = false

    /// An acceptor that does nothing before `start()`.
    init(loop: EventLoop, listener: HTTPListener, context: HTTPServerContext, group: EventLoopGroup) {
        self.loop = loop
        self.listener = listener
        self.context = context
        self.group = group
    }

    /// Watches `fd` (a descriptor of the listening socket, owned from now on: closed by `close()`).
    /// On the loop's queue.
    func start(fd: Int32) {
        guard channel == nil, listener != nil else { _ = Glibc.close(fd); return }  // started, or closed already
        let channel = SocketChannel(fd: fd, loop: loop, exclusiveReading: true,
                                    onReadable: { [unowned self] in self.acceptBatch() }, onWritable: {})
        self.channel = channel
        channel.startReading()
    }

    /// Stops watching and closes this loop's descriptor. On the loop's queue; idempotent.
    func close() {
        paused = false
        channel?.close()
        channel = nil
        listener = nil
    }

    /// Accepts up to `acceptBatch` connections queued now.
    private func acceptBatch() {
        guard let channel, let listener else { return }
        let loops = group.loops.count
        for _ in 0..<max(1, context.configuration.acceptBatch) {
            guard let target = context.reserveConnection(preferred: loop.index, loops: loops) else {
                pause(milliseconds: 50, untilCapacity: true)  // at maxConnections: leave them in the backlog
                return
            }
            switch Socket.accept(channel.fd) {
            case .success(nil):
                context.cancelReservation(loop: target)
                return
            case .success(let (connectionFD, peer)?):
                listener.open(connectionFD, peer: peer, on: group.loops[target], onItsQueue: target == loop.index)
            case .failure(let f):
                context.cancelReservation(loop: target)
                // Out of descriptors or memory: stop accepting briefly instead of spinning.
                if f.errno == EMFILE || f.errno == ENFILE || f.errno == ENOBUFS || f.errno == ENOMEM {
                    pause(milliseconds: 100, untilCapacity: false)
                }
                return
            }
        }
    }

    /// Stops watching the socket, and looks again in `milliseconds` (then every 50 ms while
    /// `untilCapacity` and the server is at `maxConnections`).
    private func pause(milliseconds: Int, untilCapacity: Bool) {
        guard let channel, !paused else { return }
        paused = true
        channel.pauseReading()
        loop.queue.asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [weak self] in
            guard let self, self.paused, let channel = self.channel else { return }
            self.paused = false
            if untilCapacity && !self.context.hasCapacity {
                self.pause(milliseconds: 50, untilCapacity: true)
            } else {
                channel.resumeReading()
            }
        }
    }
}
