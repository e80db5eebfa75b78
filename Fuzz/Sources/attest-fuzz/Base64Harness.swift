import AppAttest

/// `base64`: `Base64.decode` (standard or URL-safe alphabet, padded or not, canonical only).
///
/// Invariants: an accepted input is exactly the encoding of its decoded bytes in the alphabet and
/// padding it used (one spelling per byte string); the input read as raw bytes round-trips through
/// all four encodings; `decodeKeyId` accepts exactly the 32-byte decodings.
enum Base64Harness {
    static let harness = Harness(name: "base64", summary: "Base64.decode canonical round trips, decodeKeyId") { run($0) }

    static func run(_ input: [UInt8]) {
        let h = "base64"
        if let decoded = Base64.decode(input) {
            let urlSafe = input.contains(UInt8(ascii: "-")) || input.contains(UInt8(ascii: "_"))
            let padded = input.contains(UInt8(ascii: "="))
            let again = Array(Base64.encode(decoded, urlSafe: urlSafe, padded: padded).utf8)
            Invariant.check(again == input, h, "accepted a non-canonical spelling")
            Invariant.check(Base64.decode(input[...]) == decoded, h, "slice and array decoding differ")
        }
        let keyId = try? Base64.decodeKeyId(input)
        Invariant.check((keyId != nil) == (Base64.decode(input)?.count == 32), h, "decodeKeyId disagrees with decode")
        for urlSafe in [false, true] {
            for padded in [false, true] {
                let text = Base64.encode(input, urlSafe: urlSafe, padded: padded)
                Invariant.check(Base64.decode(text) == input, h, "encode/decode round trip failed")
            }
        }
    }
}
