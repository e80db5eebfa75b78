// Normal form of a request-target (DESIGN.md section 5; RFC 9112 section 3.2, RFC 3986 sections 3.3 and 6).

/// The normal-form rule a request-target must satisfy before anything routes on it, and that every
/// configured route path and endpoint prefix must satisfy too: one implementation for the running
/// gateway (`GatewayHTTP` checks each request-target) and for `check-config` (`GatewayConfig` checks
/// `routes[].path`, `routes[].path_prefix` and `endpoints.prefix`), so the two never disagree.
///
/// A target that is not in normal form is refused, never matched one way and forwarded another. The
/// rules, each a `TargetViolation.Rule`:
/// - origin-form only: starts with `/` (absolute-form, authority-form and asterisk-form are refused,
///   RFC 9112 section 3.2);
/// - the path (up to the first `?`) has no empty segment (`//`), no `.` or `..` segment, and only
///   `pchar` / `/` bytes (RFC 3986 section 3.3): no `\`, space, `"`, `{`, `#`, non-ASCII or control byte;
/// - percent escapes are `%` + two upper-case hex digits, never of an unreserved character
///   (`%41`, `%2E`, `%7E`...) and never of `/`, `\` or a control byte (`%2F`, `%5C`, `%00`, `%7F`);
/// - no `;` in the path unless `allowSemicolonInPath` (path parameters such as `/admin;x/` are
///   stripped by some upstream frameworks, a classic route bypass);
/// - the query (after the first `?`) is kept exactly as sent; it may hold any visible ASCII byte
///   except `#` (a fragment is never part of a request-target).
public struct RequestTargetPolicy: Sendable, Hashable {
    /// Allow `;` in the path (default false; the gateway never sets it).
    public var allowSemicolonInPath: Bool

    /// The default, strictest policy (the one the gateway and `check-config` use).
    public init(allowSemicolonInPath: Bool = false) {
        self.allowSemicolonInPath = allowSemicolonInPath
    }

    /// Checks `target`, the raw request-target bytes (RFC 9112 section 3.2).
    /// - Returns: the length of the path part (the index of the first `?`, or `target.count`).
    /// - Throws: the first rule broken, with its byte offset.
    public func validate(_ target: UnsafeRawBufferPointer) throws(TargetViolation) -> Int {
        guard let first = target.first else { throw TargetViolation(.empty, at: 0) }
        guard first == 0x2F else { throw TargetViolation(.notOriginForm, at: 0) }
        var i = 0
        var segmentStart = 1  // index of the first byte of the current segment
        let n = target.count
        while i < n {
            let b = target[i]
            switch b {
            case 0x2F:  // '/'
                if i > 0 {
                    try checkSegment(target, segmentStart, i)
                    if target[i - 1] == 0x2F { throw TargetViolation(.emptySegment, at: i) }
                }
                segmentStart = i + 1
            case 0x3F:  // '?': end of the path
                try checkSegment(target, segmentStart, i)
                try validateQuery(target, from: i + 1)
                return i
            case 0x25:  // '%'
                guard i + 2 < n, let hi = URISyntax.hexValue(target[i + 1]),
                      let lo = URISyntax.hexValue(target[i + 2]) else { throw TargetViolation(.badEscape, at: i) }
                if target[i + 1] >= 0x61 || target[i + 2] >= 0x61 { throw TargetViolation(.lowercaseEscape, at: i) }
                let decoded = hi << 4 | lo
                if URISyntax.isUnreserved(decoded) { throw TargetViolation(.encodedUnreserved, at: i) }
                if decoded == 0x2F || decoded == 0x5C || decoded < 0x20 || decoded == 0x7F {
                    throw TargetViolation(.encodedSeparator, at: i)
                }
                i += 2
            case 0x3B:  // ';'
                if !allowSemicolonInPath { throw TargetViolation(.pathParameter, at: i) }
            default:
                if !URISyntax.isPathCharacter(b) { throw TargetViolation(.badByte, at: i) }
            }
            i += 1
        }
        try checkSegment(target, segmentStart, n)
        return n
    }

    /// Checks the UTF-8 bytes of `target` (configuration values, tests, tools).
    /// - Returns: the length of the path part in bytes.
    /// - Throws: the first rule broken, with its byte offset in `target.utf8`.
    public func validate(_ target: String) throws(TargetViolation) -> Int {
        let result: Result<Int, TargetViolation> = Array(target.utf8).withUnsafeBytes { b in
            do throws(TargetViolation) { return .success(try validate(b)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    @inline(__always)
    private func checkSegment(_ t: UnsafeRawBufferPointer, _ start: Int, _ end: Int) throws(TargetViolation) {
        let len = end - start
        if len == 1 && t[start] == 0x2E { throw TargetViolation(.dotSegment, at: start) }
        if len == 2 && t[start] == 0x2E && t[start + 1] == 0x2E { throw TargetViolation(.dotSegment, at: start) }
    }

    private func validateQuery(_ t: UnsafeRawBufferPointer, from: Int) throws(TargetViolation) {
        var i = from
        while i < t.count {
            let b = t[i]
            if !URISyntax.isVisibleASCII(b) || b == 0x23 { throw TargetViolation(.badByte, at: i) }
            i += 1
        }
    }
}
