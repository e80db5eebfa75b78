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
        flush { Socket.write(fd, $0) }
    }

    /// Writes as much as the stream (plain or TLS) takes.
    package mutating func flush(to stream: ByteStream) -> (result: Flush, written: Int) {
        flush { stream.write($0) }
    }

    /// Writes `data` straight to the socket when nothing is queued; queues whatever the socket did not take.
    package mutating func writeOrQueue(_ data: UnsafeRawBufferPointer, to fd: Int32) -> (result: Flush, written: Int) {
        writeOrQueue(data) { Socket.write(fd, $0) }
    }

    /// `writeOrQueue(_:to:)` through a stream (plain or TLS).
    package mutating func writeOrQueue(_ data: UnsafeRawBufferPointer, to stream: ByteStream) -> (result: Flush, written: Int) {
        writeOrQueue(data) { stream.write($0) }
    }

    /// Writes as much as `write` takes (`write` returns the bytes taken, 0 when it would block).
    @inline(__always)
    package mutating func flush(using write: (UnsafeRawBufferPointer) -> Result<Int, Socket.Failure>) -> (result: Flush, written: Int) {
        var written = 0
        while start < bytes.count {
            let r = bytes.withUnsafeBytes { write(UnsafeRawBufferPointer(rebasing: $0[start...])) }
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

    /// Writes `data` with `write` when nothing is queued; queues whatever `write` did not take
    /// (after what was queued, when something was: then it is all flushed in order).
    @inline(__always)
    package mutating func writeOrQueue(_ data: UnsafeRawBufferPointer,
                                       using write: (UnsafeRawBufferPointer) -> Result<Int, Socket.Failure>) -> (result: Flush, written: Int) {
        guard isEmpty else {
            append(data)
            return flush(using: write)
        }
        switch write(data) {
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
