import AppAttest

/// A small deterministic CBOR encoder (RFC 8949) for the objects the simulator mints: attestation
/// objects, assertions, COSE keys and the iOS 27 authenticatorData map.
///
/// Output rules (RFC 8949 section 4.2.1 "core deterministic encoding", except map key order):
/// definite lengths only, every head in its shortest form (arguments below 24 inline, then 1, 2, 4
/// or 8 bytes). **Map entries are written in the order given**, not sorted: Apple's objects (and
/// cbor2 as used by shared/tools/ref_device.py) keep insertion order - `fmt, attStmt, authData`;
/// `x5c, receipt`; `signature, authenticatorData`; COSE `1, 3, -1, -2, -3`; iOS 27
/// `apple_bundle_version_01, apple_validation_category_01` - and those orders are not canonical.
///
/// The verifier only decodes (`AppAttest.CBORDecoder`); this encoder lives with the simulator. Unlike
/// a plain encoder it refuses duplicate map keys and exposes the head/string/integer
/// primitives the authenticatorData builder writes with. Thread-safe (stateless).
public enum CBORWriter {
    /// Encodes `value`.
    /// - Throws: `SimulatorError.invalidArgument` when a map holds the same key twice (strict
    ///   decoders, ours included, refuse duplicate keys).
    public static func encode(_ value: CBORValue) throws -> [UInt8] {
        var out: [UInt8] = []
        try append(value, to: &out)
        return out
    }

    /// Appends the encoding of `value` to `out` (same rules and errors as `encode`).
    public static func append(_ value: CBORValue, to out: inout [UInt8]) throws {
        switch value {
        case .unsigned(let n): appendHead(major: 0, argument: n, to: &out)
        case .negative(let n): appendHead(major: 1, argument: n, to: &out)
        case .bytes(let bytes): appendBytes(bytes, to: &out)
        case .text(let text): appendText(text, to: &out)
        case .array(let items):
            appendHead(major: 4, argument: UInt64(items.count), to: &out)
            for item in items { try append(item, to: &out) }
        case .map(let entries):
            var seen = Set<CBORValue>()
            appendHead(major: 5, argument: UInt64(entries.count), to: &out)
            for entry in entries {
                guard seen.insert(entry.key).inserted else {
                    throw SimulatorError.invalidArgument("duplicate CBOR map key \(entry.key)")
                }
                try append(entry.key, to: &out)
                try append(entry.value, to: &out)
            }
        case .bool(let flag): out.append(flag ? 0xF5 : 0xF4)
        case .null: out.append(0xF6)
        case .undefined: out.append(0xF7)
        }
    }

    /// Appends a head: major type (0-7) in the top 3 bits, `argument` in its shortest form.
    public static func appendHead(major: UInt8, argument: UInt64, to out: inout [UInt8]) {
        let type = (major & 0x07) << 5
        switch argument {
        case 0..<24:
            out.append(type | UInt8(argument))
        case 24...0xFF:
            out.append(type | 24)
            out.append(UInt8(argument))
        case 0x100...0xFFFF:
            out.append(type | 25)
            appendBigEndian(argument, byteCount: 2, to: &out)
        case 0x1_0000...0xFFFF_FFFF:
            out.append(type | 26)
            appendBigEndian(argument, byteCount: 4, to: &out)
        default:
            out.append(type | 27)
            appendBigEndian(argument, byteCount: 8, to: &out)
        }
    }

    /// Appends a byte string (major type 2).
    public static func appendBytes(_ bytes: [UInt8], to out: inout [UInt8]) {
        appendHead(major: 2, argument: UInt64(bytes.count), to: &out)
        out += bytes
    }

    /// Appends a text string (major type 3) of the UTF-8 bytes of `text`.
    public static func appendText(_ text: String, to out: inout [UInt8]) {
        let utf8 = Array(text.utf8)
        appendHead(major: 3, argument: UInt64(utf8.count), to: &out)
        out += utf8
    }

    /// Appends an integer: major type 0 for `value >= 0`, major type 1 (`-1 - n`) otherwise.
    public static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value >= 0 {
            appendHead(major: 0, argument: UInt64(value), to: &out)
        } else {
            // -1 - value without overflow: ~value is exactly -1 - value in two's complement.
            appendHead(major: 1, argument: UInt64(bitPattern: ~value), to: &out)
        }
    }

    private static func appendBigEndian(_ value: UInt64, byteCount: Int, to out: inout [UInt8]) {
        for index in stride(from: byteCount - 1, through: 0, by: -1) {
            out.append(UInt8(truncatingIfNeeded: value >> UInt64(index * 8)))
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
