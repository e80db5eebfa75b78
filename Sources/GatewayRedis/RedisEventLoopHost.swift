import Dispatch

/// An event loop that Redis connections can live in: its queue runs the connection, its readiness
/// mechanism watches the connection's socket, and its end of turn flushes the connection's output.
///
/// Why: with `RedisStore.Configuration.loops`, one pipelined connection runs in each of the
/// caller's event loops (the gateway's), so a command issued while the loop handles a batch of
/// requests is written with the other commands of that batch (one `send`), and its reply is
/// picked up by the loop's own readiness wait together with the loop's client and upstream sockets
/// (no separate Dispatch source, no extra thread wake-up per reply). Without it each connection
/// uses its own Dispatch read and write sources on `queue`.
///
/// Every requirement is called on `queue`, and every callback it is given runs on `queue`.
public protocol RedisEventLoopHost: AnyObject, Sendable {
    /// The loop's serial queue.
    var queue: DispatchQueue { get }

    /// Starts watching the non-blocking socket `fd` (connected or connecting); nothing is delivered
    /// until interest is set on the returned watch. Readiness is level-triggered; end of file and
    /// socket errors count as readable (and as writable while write interest is set).
    func watch(fd: Int32, onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) -> any RedisWatchedSocket

    /// Runs `work` once the loop's current turn is over (after the batch of ready sockets it is
    /// handling, or next on the queue when called outside one).
    func atEndOfTurn(_ work: @escaping () -> Void)
}

/// A socket watched by a `RedisEventLoopHost`; used on the host's queue only.
public protocol RedisWatchedSocket: AnyObject {
    /// Delivers readability (`true`) or stops delivering it.
    func setReadInterest(_ on: Bool)
    /// Delivers writability (`true`) or stops delivering it.
    func setWriteInterest(_ on: Bool)
    /// Stops watching and closes the descriptor. Idempotent.
    func close()
}
