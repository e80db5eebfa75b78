/// Base64 for App Attest binary fields (RFC 4648 sections 4 and 5), bytes in / bytes out.
///
/// Decoding accepts the standard alphabet (`+/`) or the URL-safe one (`-_`) - not both in one
/// value - padded with `=` or unpadded. Refused: whitespace or any other character, a wrong amount
/// of padding, a length of 4n+1, and non-zero unused bits (so every byte string has exactly one
/// accepted spelling per alphabet and padding choice). DESIGN.md section 1 "Binary encoding".
public enum Base64 {
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() { t[Int(c)] = UInt8(i) }
        t[Int(UInt8(ascii: "+"))] = 62; t[Int(UInt8(ascii: "/"))] = 63
        t[Int(UInt8(ascii: "-"))] = 62; t[Int(UInt8(ascii: "_"))] = 63
        return t
    }()
    /// Which alphabet a character belongs to only: 1 for `+` and `/`, 2 for `-` and `_`, else 0.
    private static let kinds: [UInt8] = {
        var k = [UInt8](repeating: 0, count: 256)
        k[Int(UInt8(ascii: "+"))] = 1; k[Int(UInt8(ascii: "/"))] = 1
        k[Int(UInt8(ascii: "-"))] = 2; k[Int(UInt8(ascii: "_"))] = 2
        return k
    }()

    /// Decodes `input`; nil when it is not valid base64 / base64url (see the type's rules).
    ///
    /// Four characters at a time into storage of the exact decoded size (no per-byte append): a
    /// character outside both alphabets maps to 0xFF, so one OR of the four values shows it.
    public static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        var count = input.count
        var padding = 0
        while count > 0 && input[count - 1] == UInt8(ascii: "=") && padding < 3 { count -= 1; padding += 1 }
        if padding > 0 {
            guard (count + padding) % 4 == 0, padding <= 2 else { return nil }
        }
        guard count % 4 != 1 else { return nil }
        if padding > 0 && (count % 4 == 0 || 4 - count % 4 != padding) { return nil }
        let whole = count / 4 * 4
        let rest = count - whole
        let size = whole / 4 * 3 + (rest == 0 ? 0 : rest - 1)
        return table.withUnsafeBufferPointer { table -> [UInt8]? in
            kinds.withUnsafeBufferPointer { kinds -> [UInt8]? in
                var seen: UInt8 = 0  // 1: a `+` or `/` was seen, 2: a `-` or `_`
                var valid = true
                // Written into a temporary buffer, then copied into an array of its exact size: the
                // array initializers that let a closure write in place (`unsafeUninitializedCapacity:`,
                // and `repeating:count:` too) are not specialized and look the array's generic
                // metadata up on every call, about 370 instructions more (bench/PERFORMANCE.md, "Twelfth pass").
                let out = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { buffer -> [UInt8] in
                    var o = 0, i = 0
                    while i < whole {
                        let c0 = input[i], c1 = input[i + 1], c2 = input[i + 2], c3 = input[i + 3]
                        let a = table[Int(c0)], b = table[Int(c1)], c = table[Int(c2)], d = table[Int(c3)]
                        guard (a | b | c | d) & 0xC0 == 0 else { valid = false; return [] }
                        seen |= kinds[Int(c0)] | kinds[Int(c1)] | kinds[Int(c2)] | kinds[Int(c3)]
                        let n = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                        buffer[o] = UInt8(truncatingIfNeeded: n >> 16)
                        buffer[o + 1] = UInt8(truncatingIfNeeded: n >> 8)
                        buffer[o + 2] = UInt8(truncatingIfNeeded: n)
                        o += 3
                        i += 4
                    }
                    if rest >= 2 {
                        let c0 = input[i], c1 = input[i + 1]
                        let a = table[Int(c0)], b = table[Int(c1)]
                        var c: UInt8 = 0
                        if rest == 3 {
                            c = table[Int(input[i + 2])]
                            seen |= kinds[Int(input[i + 2])]
                        }
                        guard (a | b | c) & 0xC0 == 0 else { valid = false; return [] }
                        seen |= kinds[Int(c0)] | kinds[Int(c1)]
                        let n = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6
                        // The bits past the last whole byte must be zero (one spelling per value).
                        guard n & (rest == 2 ? 0xFFFF : 0xFF) == 0 else { valid = false; return [] }
                        buffer[o] = UInt8(truncatingIfNeeded: n >> 16)
                        o += 1
                        if rest == 3 {
                            buffer[o] = UInt8(truncatingIfNeeded: n >> 8)
                            o += 1
                        }
                    }
                    return Array(UnsafeBufferPointer(rebasing: buffer[..<o]))
                }
                guard valid, seen != 3 else { return nil }
                return out
            }
        }
    }

    /// Decodes `input` (ASCII bytes); nil when invalid.
    public static func decode(_ input: [UInt8]) -> [UInt8]? { input.withUnsafeBytes { decode($0) } }

    /// Decodes `input` (ASCII bytes); nil when invalid.
    public static func decode(_ input: ArraySlice<UInt8>) -> [UInt8]? { input.withUnsafeBytes { decode($0) } }

    /// Decodes `text`; nil when invalid.
    public static func decode(_ text: String) -> [UInt8]? {
        var text = text
        return text.withUTF8 { decode(UnsafeRawBufferPointer($0)) }
    }

    /// Decodes a binary header or field value.
    /// - Throws: `AppAttestError(.encodingInvalid)`.
    public static func decodeField(_ input: [UInt8]) throws -> [UInt8] {
        guard let bytes = decode(input) else { throw AppAttestError(.encodingInvalid, "not base64 or base64url") }
        return bytes
    }

    /// Decodes a keyId: valid base64/base64url of exactly 32 bytes.
    /// - Throws: `AppAttestError(.encodingInvalid)` for bad base64, `.keyIdInvalid` for another length.
    public static func decodeKeyId(_ input: [UInt8]) throws -> [UInt8] {
        let bytes = try decodeField(input)
        guard bytes.count == 32 else { throw AppAttestError(.keyIdInvalid, "keyId decodes to \(bytes.count) bytes, expected 32") }
        return bytes
    }

    /// Decodes a keyId given as text (see `decodeKeyId(_: [UInt8])`).
    public static func decodeKeyId(_ text: String) throws -> [UInt8] { try decodeKeyId(Array(text.utf8)) }

    private static let standardAlphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    private static let urlSafeAlphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

    /// Encodes `bytes` in standard (default) or URL-safe base64, padded by default (RFC 4648
    /// sections 4 and 5). The text is written straight into the string's storage.
    public static func encode(_ bytes: [UInt8], urlSafe: Bool = false, padded: Bool = true) -> String {
        let alphabet = (urlSafe ? urlSafeAlphabet : standardAlphabet).utf8Start
        let rest = bytes.count % 3
        let length = bytes.count / 3 * 4 + (rest == 0 ? 0 : (padded ? 4 : rest + 1))
        return String(unsafeUninitializedCapacity: length) { out in
            var o = 0
            var i = 0
            while i + 3 <= bytes.count {
                let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
                out[o] = alphabet[Int(v >> 18)]
                out[o + 1] = alphabet[Int(v >> 12 & 63)]
                out[o + 2] = alphabet[Int(v >> 6 & 63)]
                out[o + 3] = alphabet[Int(v & 63)]
                o += 4
                i += 3
            }
            if rest > 0 {
                let v = UInt32(bytes[i]) << 16 | (rest == 2 ? UInt32(bytes[i + 1]) << 8 : 0)
                out[o] = alphabet[Int(v >> 18)]
                out[o + 1] = alphabet[Int(v >> 12 & 63)]
                o += 2
                if rest == 2 {
                    out[o] = alphabet[Int(v >> 6 & 63)]
                    o += 1
                }
                if padded {
                    for _ in 0..<(3 - rest) {
                        out[o] = UInt8(ascii: "=")
                        o += 1
                    }
                }
            }
            return o
        }
    }
}
