/// The lowest TLS protocol version a TLS listener accepts (`listen[N].tls.min_version`).
///
/// YAML: `"1.2"` (the default) or `"1.3"`, quoted or plain. Lower versions (`"1.0"`, `"1.1"`) are
/// refused with a message naming the allowed values: they are deprecated (RFC 8996).
public enum TLSVersion: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// TLS 1.2 (RFC 5246) and later: the default.
    case v1_2 = "1.2"
    /// TLS 1.3 (RFC 8446) only.
    case v1_3 = "1.3"

    /// `TLS 1.2`, `TLS 1.3`.
    public var description: String { "TLS \(rawValue)" }

    /// Orders by protocol version (1.2 < 1.3).
    public static func < (a: TLSVersion, b: TLSVersion) -> Bool {
        a == .v1_2 && b == .v1_3
    }
}
