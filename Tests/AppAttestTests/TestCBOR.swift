/// A small CBOR encoder for minting test objects (definite lengths, shortest form unless asked).
indirect enum TestCBOR {
    case uint(UInt64)
    case neg(UInt64)  // -1 - n
    case bytes([UInt8])
    case text(String)
    case array([TestCBOR])
    case map([(TestCBOR, TestCBOR)])
    case raw([UInt8])  // pre-encoded bytes, inserted verbatim

    static func int(_ v: Int64) -> TestCBOR { v >= 0 ? .uint(UInt64(v)) : .neg(UInt64(-(v + 1))) }

    var encoded: [UInt8] {
        switch self {
        case .uint(let v): return TestCBOR.head(0, v)
        case .neg(let v): return TestCBOR.head(1, v)
        case .bytes(let b): return TestCBOR.head(2, UInt64(b.count)) + b
        case .text(let t): return TestCBOR.head(3, UInt64(t.utf8.count)) + Array(t.utf8)
        case .array(let a): return TestCBOR.head(4, UInt64(a.count)) + a.flatMap(\.encoded)
        case .map(let m): return TestCBOR.head(5, UInt64(m.count)) + m.flatMap { $0.0.encoded + $0.1.encoded }
        case .raw(let r): return r
        }
    }

    static func head(_ major: UInt8, _ value: UInt64) -> [UInt8] {
        let m = major << 5
        switch value {
        case 0..<24: return [m | UInt8(value)]
        case 24..<256: return [m | 24, UInt8(value)]
        case 256..<65536: return [m | 25, UInt8(value >> 8), UInt8(value & 0xFF)]
        case 65536..<(1 << 32): return [m | 26] + (0..<4).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xFF) }
        default: return [m | 27] + (0..<8).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xFF) }
        }
    }
}
