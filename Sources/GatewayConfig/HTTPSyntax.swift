/// Checks of HTTP syntax used by the configuration: tokens (method and header names) and the
/// normal form of paths that routes and endpoints are matched against.
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
    /// lower case. The list is `GatewayHTTP.HopByHop.fieldNames` (what the running proxy drops): this
    /// module cannot import GatewayHTTP, so it is repeated here and `HopByHopListTests` keeps the two
    /// equal.
    static let hopByHopAndFraming: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "transfer-encoding", "upgrade", "http2-settings",
        "trailer", "proxy-authenticate", "proxy-authorization", "content-length", "expect",
    ]

    /// Nil when `path` is an absolute path in the normal form the proxy matches and forwards
    /// (DESIGN.md section 5; RFC 3986 sections 3.3 and 6.2.2): starts with `/`, only `pchar` and `/`,
    /// no empty segment (`//`), no `.` or `..` segment, percent-encodings with two upper-case hex digits
    /// that do not encode an unreserved character or `/`, no query or fragment. Otherwise the problem.
    static func normalFormProblem(_ path: String) -> String? {
        let b = Array(path.utf8)
        guard b.first == UInt8(ascii: "/") else { return "must start with /" }
        if b.count > 1024 { return "is longer than 1024 bytes" }
        var i = 0
        while i < b.count {
            let c = b[i]
            switch c {
            case UInt8(ascii: "?"): return "must not contain a query (?)"
            case UInt8(ascii: "#"): return "must not contain a fragment (#)"
            case UInt8(ascii: "%"):
                guard i + 2 < b.count, let hi = hex(b[i + 1]), let lo = hex(b[i + 2]) else {
                    return "has a % not followed by two hex digits"
                }
                if (b[i + 1] >= UInt8(ascii: "a") && b[i + 1] <= UInt8(ascii: "f")) || (b[i + 2] >= UInt8(ascii: "a") && b[i + 2] <= UInt8(ascii: "f")) {
                    return "has lower-case percent-encoding; write %\(String(hi * 16 + lo, radix: 16, uppercase: true).leftPadded)"
                }
                let decoded = hi * 16 + lo
                if decoded == UInt8(ascii: "/") { return "must not contain %2F (an encoded /)" }
                if isUnreserved(decoded) {
                    return "has %\(String(decoded, radix: 16, uppercase: true).leftPadded), an encoded \(Character(Unicode.Scalar(decoded))): write the character itself"
                }
                i += 3
                continue
            case UInt8(ascii: "/"):
                if i + 1 < b.count && b[i + 1] == UInt8(ascii: "/") { return "must not contain an empty segment (//)" }
                var j = i + 1
                while j < b.count && b[j] != UInt8(ascii: "/") { j += 1 }
                let segment = b[(i + 1)..<j]
                if segment.elementsEqual(".".utf8) || segment.elementsEqual("..".utf8) {
                    return "must not contain . or .. segments"
                }
            default:
                if c >= 0x80, let ch = path.first(where: { !$0.isASCII }) {
                    let encoded = String(ch).utf8.map { "%" + String($0, radix: 16, uppercase: true) }.joined()
                    return "contains \(ConfigText.quoted(String(ch))), which must be percent-encoded: \(encoded)"
                }
                if !(isUnreserved(c) || "!$&'()*+,;=:@".utf8.contains(c)) {
                    return "contains \(ConfigText.quoted(String(decoding: [c], as: UTF8.self))), which must be percent-encoded"
                }
            }
            i += 1
        }
        return nil
    }

    static func isUnreserved(_ c: UInt8) -> Bool {
        switch c {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        default:
            return c == UInt8(ascii: "-") || c == UInt8(ascii: ".") || c == UInt8(ascii: "_") || c == UInt8(ascii: "~")
        }
    }

    static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

private extension String {
    /// Two-digit form of a hex byte.
    var leftPadded: String { count < 2 ? "0" + self : self }
}
