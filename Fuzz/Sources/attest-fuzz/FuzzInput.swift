/// A cursor over a fuzzer input used to carve it into framed fields (options, lengths, values).
/// Reads past the end yield zeros / empty arrays, so every input is usable.
struct FuzzInput {
    let bytes: [UInt8]
    private(set) var index = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Bytes not read yet.
    var remaining: Int { max(0, bytes.count - index) }

    mutating func u8() -> UInt8 {
        guard index < bytes.count else { return 0 }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func u32() -> UInt32 {
        var v: UInt32 = 0
        for _ in 0..<4 { v = v << 8 | UInt32(u8()) }
        return v
    }

    mutating func i64() -> Int64 {
        var v: UInt64 = 0
        for _ in 0..<8 { v = v << 8 | UInt64(u8()) }
        return Int64(bitPattern: v)
    }

    /// Up to `count` bytes (fewer at the end of the input).
    mutating func take(_ count: Int) -> [UInt8] {
        let n = min(count, remaining)
        defer { index += n }
        return Array(bytes[index..<(index + n)])
    }

    /// A field of `u8()` bytes.
    mutating func shortField() -> [UInt8] { take(Int(u8())) }

    /// Everything left.
    mutating func rest() -> [UInt8] { take(remaining) }
}

/// Encoders for the framed inputs (used to write seeds in the same layout the harnesses read).
enum FuzzFrame {
    static func u32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
    static func i64(_ v: Int64) -> [UInt8] { (0..<8).reversed().map { UInt8(UInt64(bitPattern: v) >> (UInt64($0) * 8) & 0xFF) } }
    static func shortField(_ b: [UInt8]) -> [UInt8] { [UInt8(min(b.count, 255))] + b.prefix(255) }
}

/// Deterministic split points derived from the input (for feeding stream parsers in pieces).
struct SplitPlan {
    private var state: UInt64

    init(seed: UInt64) { state = seed | 1 }

    /// The next piece length in 1...max (xorshift; small pieces are more likely).
    mutating func next(max: Int) -> Int {
        state ^= state << 13; state ^= state >> 7; state ^= state << 17
        let bucket = state % 4
        let span: UInt64 = bucket == 0 ? 1 : bucket == 1 ? 3 : bucket == 2 ? 17 : 257
        return Swift.max(1, Swift.min(max, Int((state >> 8) % span) + 1))
    }
}
