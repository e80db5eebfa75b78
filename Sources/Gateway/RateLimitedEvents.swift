import Synchronization

/// Lifecycle events that can come in floods (a failed TLS handshake per scanning client): at most
/// one line per `interval` per event name; the next line written says how many were suppressed in
/// between, so a flood costs a counter and a bounded number of log lines, never the log.
final class RateLimitedEvents: Sendable {
    /// Writes one lifecycle line: event name and fields (the application's stderr JSON writer).
    typealias Sink = @Sendable (_ name: String, _ fields: [(String, String)]) -> Void

    private struct Window {
        var lastWritten: UInt64 = 0
        var suppressed: UInt64 = 0
    }

    private let sink: Sink
    private let interval: UInt64
    private let now: @Sendable () -> UInt64
    private let windows = Mutex<[String: Window]>([:])

    /// Events through `sink`, at most one per `intervalNanoseconds` per name, timed by `now`
    /// (monotonic nanoseconds; injected in tests).
    init(sink: @escaping Sink, intervalNanoseconds: UInt64 = 1_000_000_000, now: @escaping @Sendable () -> UInt64) {
        self.sink = sink
        interval = intervalNanoseconds
        self.now = now
    }

    /// Writes the event unless one of the same name was written less than an interval ago.
    /// - Returns: whether it was written.
    @discardableResult
    func emit(_ name: String, _ fields: [(String, String)]) -> Bool {
        let t = now()
        let suppressed: UInt64? = windows.withLock { table in
            var window = table[name] ?? Window()
            defer { table[name] = window }
            if window.lastWritten != 0 && t &- window.lastWritten < interval {
                window.suppressed += 1
                return nil
            }
            let count = window.suppressed
            window = Window(lastWritten: max(t, 1), suppressed: 0)
            return count
        }
        guard let suppressed else { return false }
        sink(name, suppressed > 0 ? fields + [("suppressed", String(suppressed))] : fields)
        return true
    }
}
