// Normal form of a request-target (DESIGN.md section 5; RFC 9112 section 3.2, RFC 3986 sections 3.3 and 6).

import GatewayIO

/// The normal-form rules a request-target must satisfy before anything routes on it.
///
/// A target that is not in normal form is refused (400 with a specific `HTTPError`), never matched
/// one way and forwarded another (DESIGN.md section 5). The rules:
/// - origin-form only: starts with `/` (absolute-form, authority-form and asterisk-form are refused,
///   RFC 9112 section 3.2);
/// - the path (up to the first `?`) has no empty segment (`//`), no `.` or `..` segment, only
///   `pchar` / `/` bytes (RFC 3986 section 3.3), so no `\`, space, `"`, `{`, non-ASCII or control byte;
/// - percent escapes are `%` + two upper-case hex digits, never of an unreserved character
///   (`%41`, `%2E`, `%7E`...) and never of `/`, `\` or a control byte (`%2F`, `%5C`, `%00`);
/// - no `;` in the path unless `allowSemicolonInPath` (path parameters such as `/admin;x/` are
///   stripped by some upstream frameworks, a classic route bypass);
/// - the query (after the first `?`) is kept exactly as sent; it may hold any visible ASCII byte
///   except `#` (a fragment is never part of a request-target).
public struct HTTPTargetPolicy: Sendable, Hashable {
    /// Allow `;` in the path (default false).
    public var allowSemicolonInPath: Bool

    /// The default, strictest policy.
    public init(allowSemicolonInPath: Bool = false) {
        self.allowSemicolonInPath = allowSemicolonInPath
    }

    /// Checks `target` (the raw request-target bytes, RFC 9112 section 3.2).
    /// - Returns: the length of the path part (the index of the first `?`, or `target.count`).
    /// - Throws: the `HTTPError.target...` case naming the first rule broken.
    public func validate(_ target: UnsafeRawBufferPointer) throws(HTTPError) -> Int {
        guard let first = target.first else { throw .badRequestLine }
        guard first == 0x2F else { throw .targetNotOriginForm }
        var i = 0
        var segmentStart = 1  // index of the first byte of the current segment
        let n = target.count
        while i < n {
            let b = target[i]
            switch b {
            case 0x2F:  // '/'
                if i > 0 {
                    try checkSegment(target, segmentStart, i)
                    if target[i - 1] == 0x2F { throw .targetEmptySegment }
                }
                segmentStart = i + 1
            case 0x3F:  // '?': end of the path
                try checkSegment(target, segmentStart, i)
                try validateQuery(target, from: i + 1)
                return i
            case 0x25:  // '%'
                guard i + 2 < n, let hi = HTTP1Syntax.hexValue(target[i + 1]),
                      let lo = HTTP1Syntax.hexValue(target[i + 2]) else { throw .targetBadEscape }
                if target[i + 1] >= 0x61 || target[i + 2] >= 0x61 { throw .targetLowercaseEscape }
                let decoded = UInt8(hi << 4 | lo)
                if HTTPTargetPolicy.isUnreserved(decoded) { throw .targetEncodedUnreserved }
                if decoded == 0x2F || decoded == 0x5C || decoded < 0x20 || decoded == 0x7F {
                    throw .targetEncodedSeparator
                }
                i += 2
            case 0x3B:  // ';'
                if !allowSemicolonInPath { throw .targetPathParameter }
            default:
                if !HTTPTargetPolicy.isPathByte(b) { throw .targetBadByte }
            }
            i += 1
        }
        try checkSegment(target, segmentStart, n)
        return n
    }

    /// Convenience for tests and tools: validates the UTF-8 bytes of `target`.
    public func validate(_ target: String) throws(HTTPError) -> Int {
        let result: Result<Int, HTTPError> = Array(target.utf8).withUnsafeBytes { b in
            do throws(HTTPError) { return .success(try validate(b)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    @inline(__always)
    private func checkSegment(_ t: UnsafeRawBufferPointer, _ start: Int, _ end: Int) throws(HTTPError) {
        let len = end - start
        if len == 1 && t[start] == 0x2E { throw .targetDotSegment }
        if len == 2 && t[start] == 0x2E && t[start + 1] == 0x2E { throw .targetDotSegment }
    }

    private func validateQuery(_ t: UnsafeRawBufferPointer, from: Int) throws(HTTPError) {
        var i = from
        while i < t.count {
            let b = t[i]
            if !HTTP1Syntax.isVisibleASCII(b) || b == 0x23 { throw .targetBadByte }
            i += 1
        }
    }

    /// RFC 3986 section 2.3 unreserved: ALPHA / DIGIT / "-" / "." / "_" / "~".
    @inline(__always) static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: return true
        default: return false
        }
    }

    /// `pchar` minus `%` and `;` (handled separately): unreserved / sub-delims / ":" / "@".
    @inline(__always) static func isPathByte(_ b: UInt8) -> Bool {
        if isUnreserved(b) { return true }
        switch b {
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3D, 0x3A, 0x40: return true
        default: return false
        }
    }
}
