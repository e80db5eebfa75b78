/// Unpadded base64url (RFC 4648 section 5) encoding on bytes, for building store key names without
/// Foundation strings. Encoding only: decoding client input is the gateway's job.
public enum Base64URL {
    private static let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// Encodes `input` as unpadded base64url ASCII bytes (4 output bytes per 3 input bytes, rounded up
    /// without `=` padding).
    public static func encode(_ input: [UInt8]) -> [UInt8] {
        let size = input.count / 3 * 4 + (input.count % 3 == 0 ? 0 : input.count % 3 + 1)
        // The alphabet is read once per call (not through its global accessor per character) and
        // the output written into a temporary buffer, then copied into an array of its exact size: the
        // array initializers that let a closure write in place are not specialized and look the
        // array's generic metadata up on every call (about 370 instructions more).
        return alphabet.withUnsafeBufferPointer { alphabet in
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: size) { out -> [UInt8] in
                var i = 0, o = 0
                while i + 3 <= input.count {
                    let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
                    out[o] = alphabet[Int(n >> 18 & 63)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                    out[o + 2] = alphabet[Int(n >> 6 & 63)]
                    out[o + 3] = alphabet[Int(n & 63)]
                    i += 3
                    o += 4
                }
                let rest = input.count - i
                if rest == 1 {
                    let n = UInt32(input[i]) << 16
                    out[o] = alphabet[Int(n >> 18 & 63)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                    o += 2
                } else if rest == 2 {
                    let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
                    out[o] = alphabet[Int(n >> 18 & 63)]
                    out[o + 1] = alphabet[Int(n >> 12 & 63)]
                    out[o + 2] = alphabet[Int(n >> 6 & 63)]
                    o += 3
                }
                return Array(UnsafeBufferPointer(rebasing: out[..<o]))
            }
        }
    }
}
