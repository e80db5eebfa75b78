// Writing a message head with memcpy into scratch space, then one append to the output.

import GatewayIO

/// Writes the pieces of one HTTP/1.1 head (status or request line, fields, framing) through a raw
/// pointer into scratch space of a bound computed up front, then appends the bytes written to the
/// output with one copy (`HTTP1HeadWriter.append(into:bound:_:)`).
///
/// Per piece this is a bounds check and a `memcpy`, where `[UInt8].append(contentsOf:)` costs a
/// uniqueness and capacity check and a generic copy each time: a proxied head has some forty pieces
/// per request. The bound must cover everything written; a write past it stops the process
/// (`precondition`), it never overflows.
struct HTTP1HeadWriter {
    private var cursor: UnsafeMutablePointer<UInt8>
    private let end: UnsafeMutablePointer<UInt8>

    private init(_ buffer: UnsafeMutableBufferPointer<UInt8>) {
        cursor = buffer.baseAddress!
        end = buffer.baseAddress! + buffer.count
    }

    /// Runs `body` with a writer over `bound` bytes of scratch space (on the stack when small
    /// enough) and appends what it wrote to `out`.
    static func append(into out: inout [UInt8], bound: Int, _ body: (inout HTTP1HeadWriter) -> Void) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(1, bound)) { buffer in
            var writer = HTTP1HeadWriter(buffer)
            body(&writer)
            out.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress, count: writer.cursor - buffer.baseAddress!))
        }
    }

    @inline(__always) mutating func put(_ bytes: UnsafeRawBufferPointer) {
        let n = bytes.count
        guard n > 0 else { return }
        precondition(end - cursor >= n, "HTTP1HeadWriter bound exceeded")
        UnsafeMutableRawPointer(cursor).copyMemory(from: bytes.baseAddress!, byteCount: n)
        cursor += n
    }

    @inline(__always) mutating func put(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { put($0) }
    }

    @inline(__always) mutating func put(_ literal: StaticString) {
        put(UnsafeRawBufferPointer(start: literal.utf8Start, count: literal.utf8CodeUnitCount))
    }

    @inline(__always) mutating func put(_ byte: UInt8) {
        precondition(cursor < end, "HTTP1HeadWriter bound exceeded")
        cursor.pointee = byte
        cursor += 1
    }

    /// `name: value\r\n`.
    @inline(__always) mutating func putField(_ name: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer) {
        put(name)
        put(": ")
        put(value)
        put("\r\n")
    }

    /// A decimal (`DecimalText`: at most `decimalBound` bytes).
    mutating func putDecimal(_ value: Int) {
        DecimalText.withDigits(of: Int64(value)) { put($0) }
    }

    /// Room for a decimal written with `putDecimal`.
    static let decimalBound = DecimalText.maxBytes
}
