// The Host field value: uri-host [ ":" port ] (RFC 9112 section 3.2, RFC 9110 section 7.2, RFC 3986 section 3.2).

/// Checks a `Host` field value (or an HTTP/2 `:authority` without user info) against
/// `uri-host [ ":" port ]` (RFC 9110 section 7.2), byte by byte, allocating nothing.
///
/// Accepted, per RFC 3986 section 3.2.2:
/// - `reg-name`: one or more of unreserved characters, sub-delims (`!$&'()*+,;=`) and
///   percent-encodings (`%` and two hex digits, either case). A dotted IPv4 address is a reg-name
///   as far as the grammar goes. Empty is refused: an `http` or `https` URI never has an empty host
///   (RFC 9110 section 4.2.1), so neither does the target URI rebuilt from `Host`.
/// - `IP-literal`: `[` IPv6address `]` in any RFC 4291 section 2.2 text form (`::` at most once,
///   1-4 hex digits per group, an IPv4 tail counting as two groups), or `[v` HEXDIG... `.` ... `]`
///   (IPvFuture). Zone identifiers (`%25eth0`, RFC 6874) are refused: they mean nothing off the
///   sender's machine.
/// - `port`: after a `:`, 1 to 5 digits whose value is at most 65535. An empty port (`host:`),
///   which the URI grammar allows but no client sends, is refused.
///
/// Refused, for example: `a b`, `a/b`, `a@b`, `a:b`, `[::1`, `::1` without brackets, `h:65536`,
/// non-ASCII bytes (internationalized names travel as `xn--` labels).
public enum HTTPHostSyntax {
    /// Whether `value` (OWS already trimmed) is `uri-host [ ":" port ]` as described on the type.
    public static func isValidHostField(_ value: UnsafeRawBufferPointer) -> Bool {
        let n = value.count
        guard n > 0 else { return false }
        var hostEnd: Int
        var portStart: Int
        if value[0] == UInt8(ascii: "[") {
            var close = 1
            while close < n && value[close] != UInt8(ascii: "]") { close += 1 }
            guard close < n, isIPLiteralContent(value, 1, close) else { return false }
            hostEnd = close + 1
            guard hostEnd == n || value[hostEnd] == UInt8(ascii: ":") else { return false }
            portStart = hostEnd + 1
        } else {
            hostEnd = 0
            while hostEnd < n && value[hostEnd] != UInt8(ascii: ":") { hostEnd += 1 }
            guard isRegName(value, 0, hostEnd) else { return false }
            portStart = hostEnd + 1
        }
        if hostEnd == n { return true }
        return isPort(value, portStart, n)
    }

    /// `isValidHostField` on the UTF-8 bytes of `value`.
    public static func isValidHostField(_ value: String) -> Bool {
        var text = value
        return text.withUTF8 { isValidHostField(UnsafeRawBufferPointer($0)) }
    }

    // MARK: parts

    /// unreserved / sub-delims (RFC 3986 sections 2.2 and 2.3), bit n of lo = byte n, of hi = byte 64 + n.
    private static let regNameLo: UInt64 = 0x2BFF_7FD2_0000_0000  // ! $ & ' ( ) * + , - . 0-9 ; =
    private static let regNameHi: UInt64 = 0x47FF_FFFE_87FF_FFFE  // A-Z _ a-z ~

    @inline(__always) private static func isRegNameByte(_ b: UInt8) -> Bool {
        if b < 64 { return (regNameLo >> UInt64(b)) & 1 == 1 }
        if b < 128 { return (regNameHi >> UInt64(b - 64)) & 1 == 1 }
        return false
    }

    @inline(__always) private static func isHex(_ b: UInt8) -> Bool { HTTP1Syntax.hexValue(b) != nil }

    @inline(__always) private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// `reg-name`, non-empty, in `v[lo..<hi]`.
    private static func isRegName(_ v: UnsafeRawBufferPointer, _ lo: Int, _ hi: Int) -> Bool {
        guard lo < hi else { return false }
        var i = lo
        while i < hi {
            let b = v[i]
            if b == UInt8(ascii: "%") {
                guard i + 2 < hi, isHex(v[i + 1]), isHex(v[i + 2]) else { return false }
                i += 3
                continue
            }
            guard isRegNameByte(b) else { return false }
            i += 1
        }
        return true
    }

    /// `port` in `v[lo..<hi]`: 1 to 5 digits, at most 65535.
    private static func isPort(_ v: UnsafeRawBufferPointer, _ lo: Int, _ hi: Int) -> Bool {
        guard hi - lo >= 1 && hi - lo <= 5 else { return false }
        var value = 0
        for i in lo..<hi {
            guard isDigit(v[i]) else { return false }
            value = value * 10 + Int(v[i] - 0x30)
        }
        return value <= 65535
    }

    /// The inside of `[...]`: IPv6address or IPvFuture, in `v[lo..<hi]`.
    private static func isIPLiteralContent(_ v: UnsafeRawBufferPointer, _ lo: Int, _ hi: Int) -> Bool {
        guard lo < hi else { return false }
        if v[lo] == UInt8(ascii: "v") || v[lo] == UInt8(ascii: "V") { return isIPvFuture(v, lo + 1, hi) }
        return isIPv6(v, lo, hi)
    }

    /// After the `v`: 1*HEXDIG "." 1*( unreserved / sub-delims / ":" ).
    private static func isIPvFuture(_ v: UnsafeRawBufferPointer, _ lo: Int, _ hi: Int) -> Bool {
        var i = lo
        while i < hi && isHex(v[i]) { i += 1 }
        guard i > lo, i < hi, v[i] == UInt8(ascii: "."), i + 1 < hi else { return false }
        for j in (i + 1)..<hi where !(isRegNameByte(v[j]) || v[j] == UInt8(ascii: ":")) { return false }
        return true
    }

    /// RFC 3986 `IPv6address` in `v[lo..<hi]` (no zone identifier).
    private static func isIPv6(_ v: UnsafeRawBufferPointer, _ lo: Int, _ hi: Int) -> Bool {
        var i = lo
        var groups = 0
        var elided = false
        if v[i] == UInt8(ascii: ":") {
            guard i + 1 < hi, v[i + 1] == UInt8(ascii: ":") else { return false }  // a lone leading ':'
            elided = true
            i += 2
            if i == hi { return true }  // "::"
        }
        while true {
            let start = i
            while i < hi && isHex(v[i]) && i - start < 5 { i += 1 }
            if i < hi && v[i] == UInt8(ascii: ".") {
                // The last piece: an IPv4 address standing for two groups.
                guard isIPv4(v, start, hi) else { return false }
                groups += 2
                break
            }
            guard i - start >= 1 && i - start <= 4 else { return false }
            groups += 1
            if i == hi { break }
            guard v[i] == UInt8(ascii: ":") else { return false }
            i += 1
            if i < hi && v[i] == UInt8(ascii: ":") {
                guard !elided else { return false }  // "::" at most once
                elided = true
                i += 1
                if i == hi { break }
            } else if i == hi {
                return false  // a lone trailing ':'
            }
        }
        return elided ? groups <= 7 : groups == 8
    }

    /// RFC 3986 `IPv4address` in `v[lo..<hi]`: four dec-octets (0-255, no leading zeros).
    private static func isIPv4(_ v: UnsafeRawBufferPointer, _ lo: Int, _ hi: Int) -> Bool {
        var i = lo
        for octet in 0..<4 {
            let start = i
            var value = 0
            while i < hi && isDigit(v[i]) && i - start < 3 {
                value = value * 10 + Int(v[i] - 0x30)
                i += 1
            }
            let digits = i - start
            guard digits >= 1, value <= 255, !(digits > 1 && v[start] == UInt8(ascii: "0")) else { return false }
            if octet < 3 {
                guard i < hi, v[i] == UInt8(ascii: ".") else { return false }
                i += 1
            }
        }
        return i == hi
    }
}
