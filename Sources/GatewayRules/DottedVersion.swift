/// A dotted numeric version such as an app's `CFBundleVersion` (`apple_bundle_version_01` of the
/// iOS 27 authenticatorData map, DESIGN.md section 3): one to eight components of ASCII digits
/// (at most 18 each), separated by single dots (`2`, `2.3`, `2.3.10`).
///
/// Compared numerically component by component, a missing component counting as 0: `2.10` is
/// above `2.9`, and `2`, `2.0` and `2.0.0` are equal. Shared by the configuration checker
/// (`bundle_version.minimum`) and the gateway (the value an assertion carries), so both read a
/// version the same way.
public struct DottedVersion: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The components without trailing zeros (`2.3.0` -> [2, 3]).
    public let components: [UInt64]
    /// The text as written.
    public let description: String

    /// Parses `text`; nil unless it is 1...8 dot-separated runs of 1...18 ASCII digits.
    public init?(_ text: String) {
        var parts: [UInt64] = []
        var current: UInt64 = 0
        var digits = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: ".") {
                guard digits > 0, parts.count < 7 else { return nil }
                parts.append(current)
                current = 0
                digits = 0
            } else if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                guard digits < 18 else { return nil }
                current = current * 10 + UInt64(byte - UInt8(ascii: "0"))
                digits += 1
            } else {
                return nil
            }
        }
        guard digits > 0 else { return nil }
        parts.append(current)
        while parts.count > 1, parts.last == 0 { parts.removeLast() }
        components = parts
        description = text
    }

    /// Numeric order, missing components counting as 0.
    public static func < (lhs: DottedVersion, rhs: DottedVersion) -> Bool {
        for i in 0..<max(lhs.components.count, rhs.components.count) {
            let a = i < lhs.components.count ? lhs.components[i] : 0
            let b = i < rhs.components.count ? rhs.components[i] : 0
            if a != b { return a < b }
        }
        return false
    }

    /// Numeric equality (`2` == `2.0`).
    public static func == (lhs: DottedVersion, rhs: DottedVersion) -> Bool { lhs.components == rhs.components }

    /// Hashes the numeric components.
    public func hash(into hasher: inout Hasher) { hasher.combine(components) }
}
