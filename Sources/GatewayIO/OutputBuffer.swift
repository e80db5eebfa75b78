// Reusable outgoing byte buffer with partial-write tracking.

/// Bytes waiting to be written to a non-blocking socket, in order.
///
/// Appends go to one `[UInt8]` whose capacity is kept between flushes (no allocation per response);
/// a buffer that grew past `shrinkAbove` is released once empty.
package struct OutputBuffer {
    private(set) var bytes: [UInt8] = []
    private var start = 0
    package static let shrinkAbove = 1 << 20

    /// An empty buffer.
    package init() {}

    /// Bytes not yet written.
    package var count: Int { bytes.count - start }
    package var isEmpty: Bool { start == bytes.count }

    package enum Flush {
        case done
        case wouldBlock
        case failed(Int32)
    }

    @inline(__always) package mutating func append(_ byte: UInt8) { bytes.append(byte) }
    @inline(__always) package mutating func append(_ data: UnsafeRawBufferPointer) { bytes.append(contentsOf: data) }
    @inline(__always) package mutating func append(_ data: [UInt8]) { bytes.append(contentsOf: data) }
    @inline(__always) package mutating func append(_ literal: StaticString) {
        bytes.append(contentsOf: UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }
    /// Gives direct access for serializers.
    @inline(__always) package mutating func withBytes<R>(_ body: (inout [UInt8]) -> R) -> R { body(&bytes) }

    /// Writes as much as the socket takes.
    package mutating func flush(to fd: Int32) -> (result: Flush, written: Int) {
        var written = 0
        while start < bytes.count {
            let r = bytes.withUnsafeBytes { Socket.write(fd, UnsafeRawBufferPointer(rebasing: $0[start...])) }
            switch r {
            case .success(0):
                compactIfLarge()
                return (.wouldBlock, written)
            case .success(let n):
                start += n
                written += n
            case .failure(let f):
                return (.failed(f.errno), written)
            }
        }
        reset()
        return (.done, written)
    }

    /// What one write attempt of `flush(using:)` did.
    package enum WriteStep {
        /// `n` bytes (1...count) were taken from the start of the bytes offered; 0 counts as `wouldBlock`.
        case wrote(Int)
        /// Nothing was taken; stop until the transport is ready again.
        case wouldBlock
        /// The transport failed (an errno, or 0 when the writer keeps its own reason); stop.
        case failed(Int32)
    }

    /// Writes as much as `write` takes, for transports other than a plain socket (TLS: the connection
    /// encrypts what it takes). Offers all queued bytes from the first unwritten one, again and again
    /// until they are gone or `write` stops; after a stop the next flush offers the same bytes first
    /// (possibly moved and followed by newer ones), which is what a TLS write retry needs.
    /// Returns `.done` (all written, buffer reset), `.wouldBlock`, or `.failed` with `write`'s code,
    /// and the number of bytes taken. `flush(to:)` is unchanged and stays the socket fast path.
    package mutating func flush(using write: (UnsafeRawBufferPointer) -> WriteStep) -> (result: Flush, written: Int) {
        var written = 0
        while start < bytes.count {
            let step = bytes.withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            switch step {
            case .wrote(let n) where n > 0:
                start += n
                written += n
            case .wrote, .wouldBlock:
                compactIfLarge()
                return (.wouldBlock, written)
            case .failed(let code):
                return (.failed(code), written)
            }
        }
        reset()
        return (.done, written)
    }

    /// Writes `data` straight to the socket when nothing is queued; queues whatever the socket did not take.
    package mutating func writeOrQueue(_ data: UnsafeRawBufferPointer, to fd: Int32) -> (result: Flush, written: Int) {
        guard isEmpty else {
            append(data)
            return flush(to: fd)
        }
        switch Socket.write(fd, data) {
        case .success(let n):
            if n == data.count { return (.done, n) }
            append(UnsafeRawBufferPointer(rebasing: data[n...]))
            return (.wouldBlock, n)
        case .failure(let f):
            return (.failed(f.errno), 0)
        }
    }

    package mutating func reset() {
        if bytes.capacity > OutputBuffer.shrinkAbove {
            bytes = []
        } else {
            bytes.removeAll(keepingCapacity: true)
        }
        start = 0
    }

    private mutating func compactIfLarge() {
        if start > 65536 && start * 2 > bytes.count {
            bytes.removeSubrange(0..<start)
            start = 0
        }
    }
}
