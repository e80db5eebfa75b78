import GatewayRules

/// Route paths, route prefixes and the endpoints prefix (`routes[].path`, `routes[].path_prefix`,
/// `endpoints.prefix`): the request-target normal form the gateway enforces at run time
/// (`GatewayRules.RequestTargetPolicy`, DESIGN.md section 5), so that every path `check-config`
/// accepts is one a request can carry, and every path the gateway refuses in a request is refused
/// here too. On top of it, a configured path is a path: no query (`?`), at most 1024 bytes.
enum PathSyntax {
    /// Longest configured path, in bytes.
    static let maximumBytes = 1024

    /// The normal-form rule the gateway applies to request-targets (its default policy).
    static let policy = RequestTargetPolicy()

    /// Nil when `path` is in normal form; otherwise what is wrong, as a message continuing the quoted
    /// value ("must not contain . or .. segments").
    static func problem(_ path: String) -> String? {
        let pathLength: Int
        do throws(TargetViolation) {
            pathLength = try policy.validate(path)
        } catch {
            return message(for: error, in: path)
        }
        if pathLength < path.utf8.count { return "must not contain a query (?)" }
        if path.utf8.count > maximumBytes { return "is longer than \(maximumBytes) bytes" }
        return nil
    }

    /// The message for `violation` of `path`, naming the bytes at fault.
    static func message(for violation: TargetViolation, in path: String) -> String {
        let bytes = Array(path.utf8)
        let at = violation.offset
        /// The percent-encoding at the violation (`%2F`), upper-cased.
        func escape() -> String { "%" + String(decoding: bytes[(at + 1)..<min(bytes.count, at + 3)], as: UTF8.self).uppercased() }
        switch violation.rule {
        case .empty, .notOriginForm:
            return "must start with /"
        case .emptySegment:
            return "must not contain an empty segment (//)"
        case .dotSegment:
            return "must not contain . or .. segments"
        case .badEscape:
            return "has a % not followed by two hex digits"
        case .lowercaseEscape:
            return "has lower-case percent-encoding; write \(escape())"
        case .encodedUnreserved:
            let character = String(decoding: [hexByte(bytes, at)], as: UTF8.self)
            return "has \(escape()), an encoded \(character): write the character itself"
        case .encodedSeparator:
            switch hexByte(bytes, at) {
            case UInt8(ascii: "/"): return "must not contain %2F (an encoded /)"
            case UInt8(ascii: "\\"): return "must not contain %5C (an encoded \\)"
            default: return "must not contain \(escape()) (an encoded control character)"
            }
        case .pathParameter:
            return "must not contain ; (requests with path parameters are refused, as some upstreams strip them before routing): write %3B for a literal ;"
        case .badByte:
            if bytes[at] == UInt8(ascii: "#") { return "must not contain a fragment (#)" }
            let character = path.utf8.index(path.utf8.startIndex, offsetBy: at).samePosition(in: path).map { path[$0] }
            guard let character, bytes[at] >= 0x80 else {
                return "contains \(ConfigText.quoted(String(decoding: [bytes[at]], as: UTF8.self))), which must be percent-encoded"
            }
            let encoded = String(character).utf8.map { "%" + String($0, radix: 16, uppercase: true) }.joined()
            return "contains \(ConfigText.quoted(String(character))), which must be percent-encoded: \(encoded)"
        }
    }

    /// The byte a well-formed `%XX` at `at` encodes.
    private static func hexByte(_ bytes: [UInt8], _ at: Int) -> UInt8 {
        (URISyntax.hexValue(bytes[at + 1]) ?? 0) << 4 | (URISyntax.hexValue(bytes[at + 2]) ?? 0)
    }
}
