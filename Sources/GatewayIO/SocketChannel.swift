// A non-blocking socket with its read/write interest, confined to one event loop.

import CEpoll
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Owns one socket descriptor and its readiness interest in the loop's `EventLoopPoller`; every
/// method runs on the loop's queue.
///
/// Behaves like a pair of Dispatch read/write sources on the descriptor (which is what it replaced):
/// readability is delivered while reading is started and not paused, writability while a write is
/// armed, both level-triggered, end of file and socket errors count as readable (and as writable
/// while armed). The descriptor is removed from the poller before it is closed, and an event
/// fetched earlier in the same batch for a closed channel is dropped, so a descriptor number reused
/// by a new connection never receives a stale event.
public final class SocketChannel {
    /// The descriptor (owned: closed by `close()`).
    public let fd: Int32
    private let poller: EventLoopPoller
    private var slot: Int
    private var reading = false
    private var readPaused = false
    private var writeArmed = false
    private var registered: UInt32 = 0
    private(set) var isClosed = false
    private var onReadable: (() -> Void)?
    private var onWritable: (() -> Void)?
    /// The epoll bits registered for reading: `EPOLLIN`, with `EPOLLEXCLUSIVE` for a listening socket
    /// that several loops watch.
    private let readInterest: UInt32

    private static let readEvents = EPOLLIN.rawValue
    private static let writeEvents = EPOLLOUT.rawValue
    private static let failureEvents = EPOLLERR.rawValue | EPOLLHUP.rawValue

    /// Takes ownership of the non-blocking socket `fd` in `loop`'s poller; nothing is delivered
    /// before `startReading()` / `armWrite()`. Call on the loop's queue; the callbacks run on it.
    ///
    /// `exclusiveReading`: readability is registered with `EPOLLEXCLUSIVE` (epoll(7)), for a listening
    /// socket that every loop of a group watches (each through its own descriptor, a `dup`): a new
    /// connection wakes one waiting loop, not all of them. Interest then only goes on and off
    /// (`startReading`, `pauseReading`, `resumeReading`, `stopReading`), never with writability, as
    /// the kernel refuses to modify an exclusive registration.
    public init(fd: Int32, loop: EventLoop, exclusiveReading: Bool = false,
                onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) {
        self.fd = fd
        poller = loop.poller
        readInterest = SocketChannel.readEvents | (exclusiveReading ? EPOLLEXCLUSIVE.rawValue : 0)
        self.onReadable = onReadable
        self.onWritable = onWritable
        slot = 0
        slot = poller.attach(self)
    }

    /// Routes readiness to new callbacks, for an owner that can only make them once the channel
    /// exists (they capture the owner). Ignored once closed. Call on the loop's queue.
    package func setHandlers(onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) {
        guard !isClosed else { return }
        self.onReadable = onReadable
        self.onWritable = onWritable
    }

    private func updateInterest() {
        guard !isClosed else { return }
        let interest = (reading && !readPaused ? readInterest : 0) | (writeArmed ? SocketChannel.writeEvents : 0)
        registered = poller.update(fd: fd, slot: slot, from: registered, to: interest)
    }

    /// Called by the poller with the epoll event bits.
    package func ready(_ events: UInt32) {
        if events & (SocketChannel.readEvents | SocketChannel.failureEvents) != 0, reading, !readPaused {
            onReadable?()
        }
        if !isClosed, writeArmed, events & (SocketChannel.writeEvents | SocketChannel.failureEvents) != 0 {
            onWritable?()
        }
    }

    /// Starts delivering readability (again after `stopReading`).
    public func startReading() {
        guard !isClosed, !reading else { return }
        reading = true
        readPaused = false
        updateInterest()
    }

    /// Whether readability is being delivered.
    package var isReading: Bool { reading && !readPaused }

    /// Stops delivering readability until `resumeReading()`.
    package func pauseReading() {
        guard reading, !readPaused else { return }
        readPaused = true
        updateInterest()
    }

    /// Resumes after `pauseReading()`.
    package func resumeReading() {
        guard reading, readPaused else { return }
        readPaused = false
        updateInterest()
    }

    /// Stops reading (e.g. after end of file); `startReading()` starts again.
    public func stopReading() {
        guard reading else { return }
        reading = false
        readPaused = false
        updateInterest()
    }

    /// Delivers writability until `disarmWrite()`.
    public func armWrite() {
        guard !isClosed, !writeArmed else { return }
        writeArmed = true
        updateInterest()
    }

    /// Stops delivering writability.
    public func disarmWrite() {
        guard writeArmed else { return }
        writeArmed = false
        updateInterest()
    }

    /// Whether writability is being delivered.
    package var isWriteArmed: Bool { writeArmed }

    /// Half-closes: sends FIN, keeps reading.
    package func shutdownWrite() {
        guard !isClosed else { return }
        _ = shutdown(fd, Int32(SHUT_WR))
        disarmWrite()
    }

    /// Closes: removes the descriptor from the poller, then closes it. Idempotent.
    public func close() {
        guard !isClosed else { return }
        reading = false
        writeArmed = false
        registered = poller.update(fd: fd, slot: slot, from: registered, to: 0)
        isClosed = true
        onReadable = nil
        onWritable = nil
        poller.release(slot: slot)
        _ = Glibc.close(fd)
    }
}
