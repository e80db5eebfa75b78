/// Strict readings of plain scalars as numbers and booleans (YAML 1.2 core schema, decimal only).
enum ScalarSyntax {
    /// A decimal integer with an optional leading `-` or `+` (no `_`, no `0x`/`0o`, no leading zeros
    /// except `0` itself), or nil when `text` is not one or does not fit in `Int`.
    static func integer(_ text: String) -> Int? {
        var bytes = Substring(text).utf8[...]
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "-") || first == UInt8(ascii: "+") {
            negative = first == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        guard let first = bytes.first, bytes.count <= 19 else { return nil }
        if first == UInt8(ascii: "0") && bytes.count > 1 { return nil }
        var value = 0
        for b in bytes {
            guard b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9") else { return nil }
            let (m, o1) = value.multipliedReportingOverflow(by: 10)
            let (a, o2) = m.addingReportingOverflow(Int(b - UInt8(ascii: "0")))
            if o1 || o2 { return nil }
            value = a
        }
        return negative ? -value : value
    }

    /// `true`/`false` (also `True`, `TRUE`, `False`, `FALSE`), else nil. YAML 1.1 spellings such as
    /// `yes`, `no`, `on`, `off` are deliberately not booleans.
    static func boolean(_ text: String) -> Bool? {
        switch text {
        case "true", "True", "TRUE": return true
        case "false", "False", "FALSE": return false
        default: return nil
        }
    }

    /// Whether `text` is a YAML 1.1 boolean spelling that YAML 1.2 (and this gateway) reads as a string.
    static func isYAML11Boolean(_ text: String) -> Bool {
        ["yes", "no", "on", "off", "y", "n"].contains(text.lowercased())
    }
}
