// The TLS protocol versions the gateway speaks.

/// A TLS protocol version the gateway may negotiate: TLS 1.2 (RFC 5246) or TLS 1.3 (RFC 8446).
/// Nothing older is ever enabled (RFC 8996 deprecates TLS 1.0 and 1.1). One type for the
/// configuration (`listen[N].tls.min_version`, spelled `"1.2"` or `"1.3"`: the raw values) and the
/// TLS layer (which maps it to OpenSSL's constants).
public enum TLSVersion: String, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// TLS 1.2, RFC 5246: the default lowest version.
    case tls12 = "1.2"
    /// TLS 1.3, RFC 8446.
    case tls13 = "1.3"

    /// `TLS 1.2`, `TLS 1.3`.
    public var description: String { "TLS \(rawValue)" }

    /// Orders TLS 1.2 before TLS 1.3.
    public static func < (lhs: TLSVersion, rhs: TLSVersion) -> Bool { lhs == .tls12 && rhs == .tls13 }
}
