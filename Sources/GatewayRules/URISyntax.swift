// Character classes and percent-encoding of URIs (RFC 3986 sections 2.1-2.3 and 3.3), byte by byte.

/// The RFC 3986 character classes that the request-target normal form, host names and URL grammars
/// are written with, and strict percent-decoding.
///
/// Every function takes one byte (an octet of UTF-8 text) and never allocates, except
/// `percentDecoded`.
public enum URISyntax {
    /// `unreserved` (RFC 3986 section 2.3): ALPHA / DIGIT / `-` / `.` / `_` / `~`.
    @inlinable public static func isUnreserved(_ b: UInt8) -> Bool {
        switch b {
        case 0x41...0x5A, 0x61...0x7A, 0x30...0x39, 0x2D, 0x2E, 0x5F, 0x7E: return true
        default: return false
        }
    }

    /// `sub-delims` (RFC 3986 section 2.2): `!` `$` `&` `'` `(` `)` `*` `+` `,` `;` `=`.
    @inlinable public static func isSubDelimiter(_ b: UInt8) -> Bool {
        switch b {
        case 0x21, 0x24, 0x26, 0x27, 0x28, 0x29, 0x2A, 0x2B, 0x2C, 0x3B, 0x3D: return true
        default: return false
        }
    }

    /// `pchar` without its `pct-encoded` alternative (RFC 3986 section 3.3): unreserved / sub-delims /
    /// `:` / `@`. `%` is not one: a percent-encoding is three bytes and is checked as such.
    @inlinable public static func isPathCharacter(_ b: UInt8) -> Bool {
        isUnreserved(b) || isSubDelimiter(b) || b == 0x3A || b == 0x40
    }

    /// Visible ASCII (`VCHAR`, RFC 5234 appendix B.1): 0x21...0x7E.
    @inlinable public static func isVisibleASCII(_ b: UInt8) -> Bool { b >= 0x21 && b <= 0x7E }

    /// The value 0...15 of a hexadecimal digit (`HEXDIG`, either case), or nil.
    @inlinable public static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case 0x30...0x39: return b &- 0x30
        case 0x41...0x46: return b &- 0x41 &+ 10
        case 0x61...0x66: return b &- 0x61 &+ 10
        default: return nil
        }
    }

    /// `text` with every `%XX` replaced by its byte (RFC 3986 section 2.1; either case of hex digit).
    /// - Returns: nil when a `%` is not followed by two hex digits or the decoded bytes are not UTF-8.
    public static func percentDecoded<S: StringProtocol>(_ text: S) -> String? {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        var bytes = text.utf8.makeIterator()
        while let byte = bytes.next() {
            guard byte == 0x25 else { out.append(byte); continue }
            guard let high = bytes.next().flatMap(hexValue), let low = bytes.next().flatMap(hexValue) else { return nil }
            out.append(high << 4 | low)
        }
        return String(validating: out, as: UTF8.self)
    }
}
