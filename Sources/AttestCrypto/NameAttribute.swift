/// One attribute of an X.509 distinguished name (RFC 5280 section 4.1.2.4), e.g. CN=Apple Inc.
public struct NameAttribute: Sendable, Equatable {
    /// OpenSSL short name of the attribute type ("CN", "O", "OU", "C", "ST", "L", ...) or a dotted OID.
    public let type: String
    /// The value as UTF-8 text.
    public let value: String

    /// An attribute `type=value`.
    public init(_ type: String, _ value: String) {
        self.type = type
        self.value = value
    }

    /// RFC 4514 string of a name given in encoding order (printed last RDN first, comma separated;
    /// special characters escaped with a backslash).
    public static func rfc4514(_ attributes: [NameAttribute]) -> String {
        attributes.reversed().map { "\($0.type)=\(escape($0.value))" }.joined(separator: ",")
    }

    private static func escape(_ value: String) -> String {
        var out = ""
        for (index, ch) in value.enumerated() {
            if ",+\"\\<>;".contains(ch) || (index == 0 && (ch == "#" || ch == " ")) { out.append("\\") }
            out.append(ch)
        }
        if out.hasSuffix(" ") { out.insert("\\", at: out.index(before: out.endIndex)) }
        return out
    }
}
