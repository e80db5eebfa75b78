import GatewayRules

/// Checks of HTTP syntax used by the configuration: tokens (method and header names) and the
/// hop-by-hop names. The normal form of paths is `GatewayRules.RequestTargetPolicy` (`PathSyntax`).
enum HTTPSyntax {
    /// RFC 9110 section 5.6.2 `tchar`.
    static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }

    /// Whether `text` is a non-empty RFC 9110 token.
    static func isToken(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.allSatisfy(isTokenByte)
    }

    /// Hop-by-hop and framing headers (RFC 9110 section 7.6.1, RFC 9112 section 6) that the proxy consumes
    /// or rewrites and never forwards as received, so their values are not the ones the upstream sees;
    /// lower case: `GatewayRules.HopByHopFields.names`, the list the running proxy drops.
    static let hopByHopAndFraming = Set(HopByHopFields.names)
}
