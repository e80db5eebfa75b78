/// A JSON value written with keys in insertion order (for stable, readable output lines).
indirect enum JSONText {
    case string(String)
    case number(Double)
    case integer(Int64)
    case bool(Bool)
    case null
    case array([JSONText])
    case object([(String, JSONText)])

    /// Compact JSON text.
    var rendered: String {
        switch self {
        case .string(let s): return JSONText.quote(s)
        case .number(let d): return d.isFinite ? String(d) : "null"
        case .integer(let i): return String(i)
        case .bool(let b): return b ? "true" : "false"
        case .null: return "null"
        case .array(let items): return "[" + items.map(\.rendered).joined(separator: ",") + "]"
        case .object(let pairs): return "{" + pairs.map { JSONText.quote($0.0) + ":" + $0.1.rendered }.joined(separator: ",") + "}"
        }
    }

    /// Indented JSON text.
    func pretty(_ indent: String = "") -> String {
        let inner = indent + "  "
        switch self {
        case .array(let items) where !items.isEmpty:
            return "[\n" + items.map { inner + $0.pretty(inner) }.joined(separator: ",\n") + "\n" + indent + "]"
        case .object(let pairs) where !pairs.isEmpty:
            return "{\n" + pairs.map { inner + JSONText.quote($0.0) + ": " + $0.1.pretty(inner) }.joined(separator: ",\n") + "\n" + indent + "}"
        default:
            return rendered
        }
    }

    static func quote(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }
}
