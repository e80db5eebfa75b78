// Byte classes and small strict parsers shared by the HTTP/1.1 request and response parsers.
// RFC 9110 section 5.6 (tokens, field values), RFC 9112 sections 2-7, RFC 3986 section 2.

import GatewayIO

/// Byte-level grammar of HTTP/1.1 (RFC 9110 section 5.6, RFC 9112) as branch-light table lookups.
///
/// Internal: every check works on single bytes so parsers never build `String`s on the hot path.
enum HTTP1Syntax {
    static let cr: UInt8 = 0x0D
    static let lf: UInt8 = 0x0A
    static let sp: UInt8 = 0x20
    static let htab: UInt8 = 0x09
    static let colon: UInt8 = 0x3A

    // tchar = "!" / "#" / "$" / "%" / "&" / "'" / "*" / "+" / "-" / "." / "^" / "_" / "`" / "|" / "~" / DIGIT / ALPHA
    // Bit n of lo = byte n (0..63), bit n of hi = byte 64+n (64..127).
    private static let tcharLo: UInt64 = 0x03FF_6CFA_0000_0000  // ! # $ % & ' * + - . 0-9
    private static let tcharHi: UInt64 = 0x57FF_FFFF_C7FF_FFFE  // A-Z ^ _ ` a-z | ~

    /// RFC 9110 section 5.6.2 `tchar`.
    @inline(__always) static func isTchar(_ b: UInt8) -> Bool {
        // Branch-free: bit 6 picks the word, the low six bits the bit; bytes from 0x80 are not tchar.
        let word = b & 0x40 == 0 ? tcharLo : tcharHi
        return b < 0x80 && (word >> UInt64(b & 0x3F)) & 1 == 1
    }

    /// RFC 9110 section 5.5: field-vchar / SP / HTAB (obs-text allowed); rejects CTLs, DEL, CR, LF, NUL.
    @inline(__always) static func isFieldValueByte(_ b: UInt8) -> Bool {
        b == htab || (b >= 0x20 && b != 0x7F)
    }

    /// Whether every byte of `bytes` is a field-value byte (`isFieldValueByte`: RFC 9110 section 5.5).
    ///
    /// Eight bytes at a time while a word holds no byte below 0x20 and no 0x7F (the word tests
    /// "has a byte less than n" and "has a zero byte" of Sean Anderson's Bit Twiddling Hacks: exact
    /// as yes/no answers, bytes 0x80-0xFF pass as obs-text); from the first word that has one
    /// (an HTAB, or a byte that fails) byte by byte. A value of 40 bytes costs 5 word tests instead
    /// of 40 byte tests: header values are the bulk of every head the gateway parses.
    static func isFieldValue(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let n = bytes.count
        var i = 0
        if let base = bytes.baseAddress {
            let ones: UInt64 = 0x0101_0101_0101_0101
            let highs: UInt64 = 0x8080_8080_8080_8080
            while i &+ 8 <= n {
                let w = base.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                let below0x20 = (w &- ones &* 0x20) & ~w & highs
                let del = w ^ (ones &* 0x7F)
                let has0x7F = (del &- ones) & ~del & highs
                if below0x20 | has0x7F != 0 { break }
                i &+= 8
            }
        }
        while i < n {
            if !isFieldValueByte(bytes[i]) { return false }
            i &+= 1
        }
        return true
    }

    /// The number of leading `tchar` bytes of `bytes` (RFC 9110 section 5.6.2): a field name or a
    /// method ends where this stops.
    @inline(__always) static func tokenLength(_ bytes: UnsafeRawBufferPointer) -> Int {
        var i = 0
        while i < bytes.count && isTchar(bytes[i]) { i &+= 1 }
        return i
    }

    /// Visible ASCII (VCHAR, 0x21-0x7E).
    @inline(__always) static func isVisibleASCII(_ b: UInt8) -> Bool { b >= 0x21 && b <= 0x7E }

    /// Value of a hex digit, or nil.
    @inline(__always) static func hexValue(_ b: UInt8) -> Int? {
        switch b {
        case 0x30...0x39: return Int(b - 0x30)
        case 0x41...0x46: return Int(b - 0x41 + 10)
        case 0x61...0x66: return Int(b - 0x61 + 10)
        default: return nil
        }
    }

    /// ASCII lower-casing of one byte.
    @inline(__always) static func lower(_ b: UInt8) -> UInt8 { (b >= 0x41 && b <= 0x5A) ? b | 0x20 : b }

    /// Case-insensitive ASCII comparison of two byte ranges.
    @inline(__always)
    static func equalsCaseInsensitive(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var i = 0
        while i < a.count {
            if a[i] != b[i] && lower(a[i]) != lower(b[i]) { return false }
            i += 1
        }
        return true
    }

    /// Case-insensitive comparison of bytes with an ASCII literal given in lower case.
    @inline(__always)
    static func equalsLowercaseLiteral(_ a: UnsafeRawBufferPointer, _ literal: StaticString) -> Bool {
        guard a.count == literal.utf8CodeUnitCount else { return false }
        let l = literal.utf8Start
        var i = 0
        while i < a.count {
            if lower(a[i]) != l[i] { return false }
            i += 1
        }
        return true
    }

    /// Parses `1*DIGIT` into a non-negative Int without overflow traps (RFC 9110 section 8.6).
    /// - Returns: nil when empty, when a byte is not a digit, or when the value exceeds `Int.max`.
    static func parseDecimal(_ bytes: UnsafeRawBufferPointer) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for b in bytes {
            guard b >= 0x30 && b <= 0x39 else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (s, o2) = m.addingReportingOverflow(Int(b - 0x30))
            if o1 || o2 { return nil }
            value = s
        }
        return value
    }

    /// Index of the first LF in `buffer[from...]`, or nil (memchr).
    @inline(__always) static func indexOfLF(_ buffer: UnsafeRawBufferPointer, from: Int) -> Int? {
        guard from < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let hit = memchr(base + from, Int32(lf), buffer.count - from) else { return nil }
        return UnsafeRawPointer(hit) - base
    }

    /// Trims optional whitespace (SP / HTAB, RFC 9110 section 5.6.3) from both ends of `range`.
    @inline(__always)
    static func trimOWS(_ buffer: UnsafeRawBufferPointer, _ range: Range<Int>) -> Range<Int> {
        var lo = range.lowerBound, hi = range.upperBound
        while lo < hi && (buffer[lo] == sp || buffer[lo] == htab) { lo += 1 }
        while hi > lo && (buffer[hi - 1] == sp || buffer[hi - 1] == htab) { hi -= 1 }
        return lo..<hi
    }

    /// Calls `body` with each comma-separated list element of `value` (RFC 9110 section 5.6.1), OWS trimmed.
    /// Empty elements are passed as empty buffers (the caller decides whether to tolerate them).
    /// `body` returns false to stop early.
    static func forEachListElement(_ value: UnsafeRawBufferPointer,
                                   _ body: (UnsafeRawBufferPointer) -> Bool) {
        var start = 0
        var i = 0
        while i <= value.count {
            if i == value.count || value[i] == 0x2C {
                let r = trimOWS(value, start..<i)
                if !body(UnsafeRawBufferPointer(rebasing: value[r])) { return }
                start = i + 1
            }
            i += 1
        }
    }

    /// Appends the lower-case hex digits of `value` (> 0) to `out` (chunk sizes, RFC 9112 section 7.1).
    @inline(__always) static func appendHex(_ value: Int, to out: inout [UInt8]) {
        let hex: StaticString = "0123456789abcdef"
        var shift = (Int.bitWidth - value.leadingZeroBitCount + 3) / 4 * 4 - 4
        if shift < 0 { out.append(0x30); return }
        while shift >= 0 {
            out.append(hex.utf8Start[(value >> shift) & 0xF])
            shift -= 4
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
