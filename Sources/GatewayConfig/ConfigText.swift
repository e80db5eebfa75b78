/// Small text helpers shared by the configuration messages.
enum ConfigText {
    /// `value` in double quotes, control characters escaped, cut to 64 characters so that a message
    /// never echoes a huge or multi-line value.
    static func quoted(_ value: String) -> String {
        var out = "\""
        var count = 0
        for ch in value.unicodeScalars {
            if count == 64 { out += "..."; break }
            count += 1
            switch ch {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if ch.value < 0x20 || ch.value == 0x7F {
                    out += "\\u{\(String(ch.value, radix: 16))}"
                } else {
                    out.unicodeScalars.append(ch)
                }
            }
        }
        return out + "\""
    }

    /// "1 route" / "2 routes".
    static func plural(_ n: Int, _ word: String) -> String {
        n == 1 ? "1 \(word)" : "\(n) \(word)s"
    }
}

extension ConfigText {
    /// A URL quoted for a message, with any password (`:secret@`) replaced by `***`.
    static func redactedURL(_ text: String) -> String {
        guard let scheme = text.range(of: "://"), let at = text[scheme.upperBound...].lastIndex(of: "@") else {
            return quoted(text)
        }
        let userInfo = text[scheme.upperBound..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return quoted(text) }
        return quoted(String(text[..<colon]) + ":***" + String(text[at...]))
    }
}
