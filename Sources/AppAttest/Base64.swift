/// Base64 for App Attest binary fields (RFC 4648 sections 4 and 5), bytes in / bytes out.
///
/// Decoding accepts the standard alphabet (`+/`) or the URL-safe one (`-_`) - not both in one
/// value - padded with `=` or unpadded. Refused: whitespace or any other character, a wrong amount
/// of padding, a length of 4n+1, and non-zero unused bits (so every byte string has exactly one
/// accepted spelling per alphabet and padding choice). DESIGN.md section 1 "Binary encoding".
public enum Base64 {
    private static let invalid: UInt8 = 0xFF
    private static let table: [UInt8] = {
        var t = [UInt8](repeating: 0xFF, count: 256)
        for (i, c) in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8.enumerated() { t[Int(c)] = UInt8(i) }
        t[Int(UInt8(ascii: "+"))] = 62; t[Int(UInt8(ascii: "/"))] = 63
        t[Int(UInt8(ascii: "-"))] = 62; t[Int(UInt8(ascii: "_"))] = 63
        return t
    }()

    /// Decodes `input`; nil when it is not valid base64 / base64url (see the type's rules).
    public static func decode(_ input: UnsafeRawBufferPointer) -> [UInt8]? {
        var count = input.count
        var padding = 0
        while count > 0 && input[count - 1] == UInt8(ascii: "=") && padding < 3 { count -= 1; padding += 1 }
        if padding > 0 {
            guard (count + padding) % 4 == 0, padding <= 2 else { return nil }
        }
        guard count % 4 != 1 else { return nil }
        if padding > 0 && (count % 4 == 0 || 4 - count % 4 != padding) { return nil }
        var standard = false, urlSafe = false
        var out = [UInt8]()
        out.reserveCapacity(count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for i in 0..<count {
            let c = input[i]
            let v = table[Int(c)]
            guard v != invalid else { return nil }
            if c == UInt8(ascii: "+") || c == UInt8(ascii: "/") { standard = true }
            if c == UInt8(ascii: "-") || c == UInt8(ascii: "_") { urlSafe = true }
            accumulator = accumulator << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard !(standard && urlSafe), accumulator == 0 else { return nil }
        return out
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
