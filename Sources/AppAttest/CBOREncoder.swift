/// Encodes `CBORValue`s (RFC 8949) with definite lengths and shortest-form arguments, map entries in
/// the order given - the form Apple's devices emit. For the simulator / software device and tests;
/// the verifier itself only decodes.
public enum CBOREncoder {
    /// The encoding of `value`. Maps keep their entry order (duplicate keys are the caller's bug and
    /// will be refused by `CBORDecoder`).
    public static func encode(_ value: CBORValue) -> [UInt8] {
        var out: [UInt8] = []
        append(value, to: &out)
        return out
    }

    private static func append(_ value: CBORValue, to out: inout [UInt8]) {
        switch value {
        case .unsigned(let v): head(0, v, &out)
        case .negative(let n): head(1, n, &out)
        case .bytes(let b): head(2, UInt64(b.count), &out); out += b
        case .text(let t): head(3, UInt64(t.utf8.count), &out); out += t.utf8
        case .array(let items):
            head(4, UInt64(items.count), &out)
            for item in items { append(item, to: &out) }
        case .map(let entries):
            head(5, UInt64(entries.count), &out)
            for entry in entries { append(entry.key, to: &out); append(entry.value, to: &out) }
        case .bool(let b): out.append(b ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        }
    }

    private static func head(_ major: UInt8, _ value: UInt64, _ out: inout [UInt8]) {
        let m = major << 5
        switch value {
        case 0..<24: out.append(m | UInt8(value))
        case 24..<0x100: out += [m | 24, UInt8(value)]
        case 0x100..<0x10000: out += [m | 25, UInt8(value >> 8), UInt8(value & 0xFF)]
        case 0x10000..<0x1_0000_0000: out += [m | 26, UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
        default:
            out.append(m | 27)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(value >> UInt64(shift) & 0xFF)) }
        }
    }
}

extension CBORValue {
    /// A CBOR integer from a signed value.
    public static func integer(_ value: Int64) -> CBORValue {
        value >= 0 ? .unsigned(UInt64(value)) : .negative(UInt64(-(value + 1)))
    }

    /// A map from (key, value) pairs in order.
    public static func map(_ pairs: [(CBORValue, CBORValue)]) -> CBORValue {
        .map(pairs.map { CBORMapEntry(key: $0.0, value: $0.1) })
    }
}
