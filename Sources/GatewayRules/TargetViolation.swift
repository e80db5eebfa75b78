// Why a request-target is not in normal form (DESIGN.md section 5).

/// The first normal-form rule a request-target (or a configured route path) breaks, and where.
///
/// Thrown by `RequestTargetPolicy.validate`. The proxy core maps `rule` to its 400 answer
/// (`HTTPError.target...`); the configuration turns it into a message naming the offending bytes.
public struct TargetViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// The rules of the normal form, one case per way to break it.
    public enum Rule: String, Sendable, Hashable, CaseIterable {
        /// The target is empty.
        case empty
        /// Not origin-form: absolute-form, authority-form and asterisk-form (RFC 9112 section 3.2),
        /// or anything else that does not start with `/`.
        case notOriginForm = "not_origin_form"
        /// An empty path segment (`//`).
        case emptySegment = "empty_segment"
        /// A `.` or `..` path segment (RFC 3986 section 5.2.4).
        case dotSegment = "dot_segment"
        /// A percent-encoded unreserved character (`%41`, `%2E`, `%7E`...; RFC 3986 section 6.2.2.2).
        case encodedUnreserved = "encoded_unreserved"
        /// A percent-encoded separator: `/` (`%2F`), `\` (`%5C`) or a control byte (`%00`-`%1F`, `%7F`).
        case encodedSeparator = "encoded_separator"
        /// A `%` not followed by two hex digits (RFC 3986 section 2.1).
        case badEscape = "bad_escape"
        /// A percent-encoding with lower-case hex digits (`%3a`; RFC 3986 section 6.2.2.1 normalizes to
        /// upper case).
        case lowercaseEscape = "lowercase_escape"
        /// A byte outside `pchar` / `/` in the path (`\`, `"`, `{`, space, `#`, a control byte,
        /// non-ASCII...), or outside visible ASCII (or `#`) in the query.
        case badByte = "bad_byte"
        /// A `;` in the path (path parameters, which some upstreams strip before routing).
        case pathParameter = "path_parameter"
    }

    /// The rule broken.
    public let rule: Rule
    /// Byte offset in the checked text where the breach starts: the offending byte, the `%` of an
    /// escape, the first byte of a dot segment, the second `/` of an empty segment; 0 for `empty` and
    /// `notOriginForm`.
    public let offset: Int

    /// A violation of `rule` at byte `offset`.
    public init(_ rule: Rule, at offset: Int) {
        self.rule = rule
        self.offset = offset
    }

    /// `dot_segment at byte 3`.
    public var description: String { "\(rule.rawValue) at byte \(offset)" }
}
