// ASCII decimal digits of integers, without String: the one writer of the HTTP heads, the RESP
// commands and the address texts.

/// Decimal text of integers for the hot paths (HTTP `Content-Length` and status fields, RESP
/// lengths and arguments, IPv4 address text), written into bytes without a `String`.
package enum DecimalText {
    /// The most bytes `withDigits(of:)` gives: `-9223372036854775808` (`Int64.min`), 20 bytes.
    package static let maxBytes = 20

    /// Calls `body` with the decimal text of `value` (a leading `-` when negative), in a stack
    /// buffer valid only during the call.
    @inlinable @inline(__always)
    package static func withDigits<R>(of value: Int64, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var buffer: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes; digits are written from the end
        return withUnsafeMutableBytes(of: &buffer) { d in
            var n = value.magnitude
            var start = 24
            repeat {
                start -= 1
                d[start] = UInt8(truncatingIfNeeded: n % 10) &+ 0x30
                n /= 10
            } while n > 0
            if value < 0 {
                start -= 1
                d[start] = 0x2D
            }
            return body(UnsafeRawBufferPointer(rebasing: d[start...]))
        }
    }

    /// Appends the decimal text of `value` to `out` (one or two digits without the digit buffer: most
    /// lengths, counts and address octets).
    @inlinable @inline(__always)
    package static func append(_ value: Int64, to out: inout [UInt8]) {
        if value >= 0 && value < 100 {
            if value >= 10 { out.append(UInt8(truncatingIfNeeded: value / 10) &+ 0x30) }
            out.append(UInt8(truncatingIfNeeded: value % 10) &+ 0x30)
            return
        }
        withDigits(of: value) { out.append(contentsOf: $0) }
    }

    /// `append(_:to:)` for an `Int`.
    @inlinable @inline(__always)
    package static func append(_ value: Int, to out: inout [UInt8]) {
        append(Int64(value), to: &out)
    }
}
