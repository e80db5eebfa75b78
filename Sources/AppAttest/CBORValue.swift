/// A decoded CBOR data item (RFC 8949), restricted to what App Attest uses: integers, byte and text
/// strings, arrays, maps and the simple values false/true/null/undefined (no tags, no floats).
public indirect enum CBORValue: Sendable, Hashable {
    /// Major type 0: an unsigned integer.
    case unsigned(UInt64)
    /// Major type 1: the negative integer `-1 - n` (stored as n).
    case negative(UInt64)
    /// Major type 2: a byte string.
    case bytes([UInt8])
    /// Major type 3: a text string (valid UTF-8).
    case text(String)
    /// Major type 4: an array.
    case array([CBORValue])
    /// Major type 5: a map, entries in encoded order (keys are unique).
    case map([CBORMapEntry])
    /// Simple values false / true.
    case bool(Bool)
    /// Simple value null.
    case null
    /// Simple value undefined.
    case undefined

    /// The entry value for text key `key` of a map (nil when absent or not a map).
    public subscript(key: String) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        return entries.first { $0.key == .text(key) }?.value
    }

    /// The entry value for integer key `key` of a map (nil when absent or not a map).
    public subscript(intKey key: Int64) -> CBORValue? {
        guard case .map(let entries) = self else { return nil }
        let wanted: CBORValue = key >= 0 ? .unsigned(UInt64(key)) : .negative(UInt64(-(key + 1)))
        return entries.first { $0.key == wanted }?.value
    }

    /// The bytes of a byte string.
    public var bytesValue: [UInt8]? { if case .bytes(let b) = self { return b } else { return nil } }
    /// The text of a text string.
    public var textValue: String? { if case .text(let t) = self { return t } else { return nil } }
    /// The elements of an array.
    public var arrayValue: [CBORValue]? { if case .array(let a) = self { return a } else { return nil } }
    /// The entries of a map.
    public var mapValue: [CBORMapEntry]? { if case .map(let m) = self { return m } else { return nil } }
    /// An integer that fits in Int64.
    public var integerValue: Int64? {
        switch self {
        case .unsigned(let u): return u <= UInt64(Int64.max) ? Int64(u) : nil
        case .negative(let n): return n <= UInt64(Int64.max) ? -1 - Int64(n) : nil
        default: return nil
        }
    }
}
