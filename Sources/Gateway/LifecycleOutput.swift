import Dispatch
import Synchronization

/// Standard error while the gateway runs: each lifecycle line (`store_unavailable`,
/// `upstream_bad_response`, `tls_handshake_failed`, `config_reloaded`, ...) is handed to one writer
/// queue, never written on the thread that logs it. Event loops report upstream, store and TLS
/// events, and the signal handlers share the main queue, so a reader that stops reading (a stalled
/// journald or container log driver: `write(2)` on a full pipe blocks) must stall neither.
///
/// At most `limit` bytes wait for the writer; a line that does not fit is dropped and counted
/// (`dropped`, which the `stopped` line reports). `flush(waitingAtMost:)` before exit waits for the
/// queue at most that long. Lines written before the gateway runs (start-up failures, check-config)
/// go straight to standard error: nothing else runs then.
public final class LifecycleOutput: Sendable {
    /// Bytes that may wait for the writer.
    public static let limit = 1 << 20

    private let fd: Int32
    private let writer = DispatchQueue(label: "attest-gateway.lifecycle")
    private let waiting = Atomic<Int>(0)
    private let droppedLines = Atomic<Int>(0)

    /// Writes to file descriptor `fd` (standard error by default).
    public init(fd: Int32 = 2) { self.fd = fd }

    /// Lines dropped so far because `limit` bytes were already waiting.
    public var dropped: Int { droppedLines.load(ordering: .relaxed) }

    /// Queues `line` (its bytes, newline included); never blocks.
    public func write(_ line: [UInt8]) {
        let size = line.count
        if waiting.add(size, ordering: .relaxed).newValue > LifecycleOutput.limit {
            waiting.subtract(size, ordering: .relaxed)
            droppedLines.add(1, ordering: .relaxed)
            return
        }
        writer.async { [self] in
            AccessLog.writeAll(fd, line)
            waiting.subtract(size, ordering: .relaxed)
        }
    }

    /// Waits at most `timeout` for the lines queued so far to be written.
    /// - Returns: true when they were written in time.
    @discardableResult
    public func flush(waitingAtMost timeout: DispatchTimeInterval) -> Bool {
        let done = DispatchSemaphore(value: 0)
        writer.async { done.signal() }
        return done.wait(timeout: .now() + timeout) == .success
    }
}
