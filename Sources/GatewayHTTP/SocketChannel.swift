// A non-blocking socket with its Dispatch read/write sources, confined to one event loop.

import Dispatch
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Owns one socket descriptor and its Dispatch sources; every method runs on the loop's queue.
///
/// Dispatch rules handled here once: sources start inactive; a suspended source must be resumed for
/// its cancel handler to run; the descriptor is closed only after every source's cancel handler ran
/// (closing earlier could let a new descriptor with the same number receive stale events).
final class SocketChannel {
    let fd: Int32
    private let queue: DispatchQueue
    private var readSource: DispatchSourceRead?
    private var writeSource: DispatchSourceWrite?
    private var readSuspended = false
    private var writeSuspended = false
    private var liveSources = 0
    private(set) var isClosed = false
    private var onReadable: (() -> Void)?
    private var onWritable: (() -> Void)?

    init(fd: Int32, loop: EventLoop, onReadable: @escaping () -> Void, onWritable: @escaping () -> Void) {
        self.fd = fd
        queue = loop.queue
        self.onReadable = onReadable
        self.onWritable = onWritable
    }

    /// Starts delivering readability (creates the read source on first use).
    func startReading() {
        guard !isClosed, readSource == nil else { return }
        let source = DispatchSource.makeReadSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [unowned self] in self.onReadable?() }
        source.setCancelHandler { [self] in self.sourceCancelled() }
        liveSources += 1
        readSource = source
        source.activate()
    }

    /// Whether readability is being delivered.
    var isReading: Bool { readSource != nil && !readSuspended }

    /// Stops delivering readability until `resumeReading()`.
    func pauseReading() {
        guard let source = readSource, !readSuspended else { return }
        source.suspend()
        readSuspended = true
    }

    /// Resumes after `pauseReading()`.
    func resumeReading() {
        guard let source = readSource, readSuspended else { return }
        readSuspended = false
        source.resume()
    }

    /// Stops reading for good (e.g. after end of file).
    func stopReading() {
        guard let source = readSource else { return }
        readSource = nil
        source.cancel()
        if readSuspended { readSuspended = false; source.resume() }
    }

    /// Delivers writability until `disarmWrite()` (creates the write source on first use).
    func armWrite() {
        guard !isClosed else { return }
        if let source = writeSource {
            if writeSuspended { writeSuspended = false; source.resume() }
            return
        }
        let source = DispatchSource.makeWriteSource(fileDescriptor: fd, queue: queue)
        source.setEventHandler { [unowned self] in self.onWritable?() }
        source.setCancelHandler { [self] in self.sourceCancelled() }
        liveSources += 1
        writeSource = source
        source.activate()
    }

    /// Stops delivering writability.
    func disarmWrite() {
        guard let source = writeSource, !writeSuspended else { return }
        source.suspend()
        writeSuspended = true
    }

    /// Whether writability is being delivered.
    var isWriteArmed: Bool { writeSource != nil && !writeSuspended }

    /// Half-closes: sends FIN, keeps reading.
    func shutdownWrite() {
        guard !isClosed else { return }
        _ = shutdown(fd, Int32(SHUT_WR))
        disarmWrite()
    }

    /// Closes: cancels the sources, the descriptor is closed once they are gone. Idempotent.
    func close() {
        guard !isClosed else { return }
        isClosed = true
        onReadable = nil
        onWritable = nil
        if let source = readSource {
            readSource = nil
            source.cancel()
            if readSuspended { readSuspended = false; source.resume() }
        }
        if let source = writeSource {
            writeSource = nil
            source.cancel()
            if writeSuspended { writeSuspended = false; source.resume() }
        }
        if liveSources == 0 { _ = Glibc.close(fd) }
    }

    private func sourceCancelled() {
        liveSources -= 1
        if liveSources == 0 && isClosed { _ = Glibc.close(fd) }
    }
}
