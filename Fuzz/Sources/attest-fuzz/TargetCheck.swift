/// An independent statement of the request-target normal form (DESIGN.md section 5), written
/// without looking at `RequestTargetPolicy`'s structure: split into path and query, split the path into
/// segments, then check each segment and each escape.
enum TargetCheck {
    static let unreserved = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))
    static let subDelimsAndColonAt = Set(Array("!$&'()*+,=:@".utf8))
    static let upperHex = Array("0123456789ABCDEF".utf8)

    /// The path length (index of the first `?`, or the count) when `target` is in normal form, else nil.
    static func normalPathLength(_ target: [UInt8], allowSemicolon: Bool) -> Int? {
        guard target.first == UInt8(ascii: "/") else { return nil }
        let q = target.firstIndex(of: UInt8(ascii: "?")) ?? target.count
        let path = Array(target[..<q])
        if q < target.count {
            for b in target[(q + 1)...] where !(0x21...0x7E).contains(b) || b == UInt8(ascii: "#") { return nil }
        }
        let segments = path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).dropFirst()
        for (n, segment) in segments.enumerated() {
            let s = Array(segment)
            if s.isEmpty && n != segments.count - 1 { return nil }  // `//`; only a final empty segment (trailing slash)
            if s == [0x2E] || s == [0x2E, 0x2E] { return nil }
            var i = 0
            while i < s.count {
                let b = s[i]
                if b == UInt8(ascii: "%") {
                    guard i + 2 < s.count, let hi = upperHex.firstIndex(of: s[i + 1]), let lo = upperHex.firstIndex(of: s[i + 2]) else { return nil }
                    let decoded = UInt8(hi * 16 + lo)
                    if unreserved.contains(decoded) || decoded == 0x2F || decoded == 0x5C || decoded < 0x20 || decoded == 0x7F { return nil }
                    i += 3
                    continue
                }
                if b == UInt8(ascii: ";") { if !allowSemicolon { return nil } } else if !unreserved.contains(b) && !subDelimsAndColonAt.contains(b) { return nil }
                i += 1
            }
        }
        return q
    }

    /// The brief's explicit list, checked on the path part of an accepted target.
    static func hasForbiddenPattern(_ path: [UInt8]) -> String? {
        let text = String(decoding: path, as: UTF8.self)
        for pattern in ["//", "/./", "/../", "%2F", "%2f", "%5C", "%5c", "%2E", "%2e", "%00", "\\", " ", "#"] where text.contains(pattern) { return pattern }
        if text.hasSuffix("/.") || text.hasSuffix("/..") { return "final dot segment" }
        if path.contains(where: { $0 < 0x21 || $0 > 0x7E }) { return "byte outside visible ASCII" }
        return nil
    }
}
