/// RFC 7468 textual encoding (PEM) helpers: `-----BEGIN label-----` base64 `-----END label-----`.
public enum PEM {
    /// The DER bytes of every block with `label` in `text`, in order.
    /// - Throws: `CryptoError.invalidEncoding` when a block is unterminated or its base64 is invalid.
    public static func decodeAll(_ text: String, label: String) throws -> [[UInt8]] {
        let begin = "-----BEGIN \(label)-----", end = "-----END \(label)-----"
        var blocks: [[UInt8]] = []
        var rest = Substring(text)
        while let start = rest.firstRange(of: begin) {
            guard let stop = rest[start.upperBound...].firstRange(of: end) else {
                throw CryptoError.invalidEncoding("unterminated PEM block \(label)")
            }
            let body = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = decodeBase64(Array(body.utf8)) else { throw CryptoError.invalidEncoding("bad base64 in PEM block \(label)") }
            blocks.append(der)
            rest = rest[stop.upperBound...]
        }
        return blocks
    }

    /// The DER bytes of the single block with `label` (exactly one must be present).
    public static func decode(_ text: String, label: String) throws -> [UInt8] {
        let blocks = try decodeAll(text, label: label)
        guard blocks.count == 1 else { throw CryptoError.invalidEncoding("expected one PEM \(label) block, found \(blocks.count)") }
        return blocks[0]
    }

    /// PEM text of `der` under `label`, 64 characters per line, ending in a newline.
    public static func encode(_ der: [UInt8], label: String) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var chars: [UInt8] = []
        chars.reserveCapacity((der.count + 2) / 3 * 4)
        var i = 0
        while i < der.count {
            let b0 = der[i], b1 = i + 1 < der.count ? der[i + 1] : 0, b2 = i + 2 < der.count ? der[i + 2] : 0
            chars.append(alphabet[Int(b0 >> 2)])
            chars.append(alphabet[Int((b0 & 3) << 4 | b1 >> 4)])
            chars.append(i + 1 < der.count ? alphabet[Int((b1 & 15) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            chars.append(i + 2 < der.count ? alphabet[Int(b2 & 63)] : UInt8(ascii: "="))
            i += 3
        }
        var out = "-----BEGIN \(label)-----\n"
        var start = 0
        while start < chars.count {
            let stop = min(start + 64, chars.count)
            out += String(decoding: chars[start..<stop], as: UTF8.self) + "\n"
            start = stop
        }
        return out + "-----END \(label)-----\n"
    }

    /// Standard padded base64 (RFC 4648 section 4), as PEM requires.
    static func decodeBase64(_ chars: [UInt8]) -> [UInt8]? {
        guard chars.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 4 * 3)
        var i = 0
        while i < chars.count {
            var values = [UInt8](repeating: 0, count: 4)
            var pad = 0
            for j in 0..<4 {
                let c = chars[i + j]
                if c == UInt8(ascii: "=") {
                    guard i + 4 == chars.count, j >= 2 else { return nil }
                    pad += 1
                    continue
                }
                guard pad == 0, let v = value(c) else { return nil }
                values[j] = v
            }
            out.append(values[0] << 2 | values[1] >> 4)
            if pad < 2 { out.append(values[1] << 4 | values[2] >> 2) }
            if pad < 1 { out.append(values[2] << 6 | values[3]) }
            i += 4
        }
        return out
    }

    private static func value(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+"): return 62
        case UInt8(ascii: "/"): return 63
        default: return nil
        }
    }
}
