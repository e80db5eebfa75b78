/// Minimal DER encoder (X.690 section 10) for the values the certificate builder writes itself
/// (extension values, OIDs). Definite, minimal lengths only.
public enum DERWriter {
    /// A TLV with a single-byte `tag` and `content`.
    public static func tlv(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        [tag] + length(content.count) + content
    }

    /// Definite minimal length octets for `count`.
    public static func length(_ count: Int) -> [UInt8] {
        if count < 0x80 { return [UInt8(count)] }
        var bytes: [UInt8] = []
        var value = count
        while value > 0 { bytes.insert(UInt8(value & 0xFF), at: 0); value >>= 8 }
        return [0x80 | UInt8(bytes.count)] + bytes
    }

    /// SEQUENCE of already encoded elements.
    public static func sequence(_ elements: [[UInt8]]) -> [UInt8] { tlv(0x30, elements.flatMap { $0 }) }
    /// OCTET STRING.
    public static func octetString(_ bytes: [UInt8]) -> [UInt8] { tlv(0x04, bytes) }
    /// BOOLEAN (DER: TRUE is 0xFF).
    public static func boolean(_ value: Bool) -> [UInt8] { [0x01, 0x01, value ? 0xFF : 0x00] }

    /// INTEGER of a non-negative value, minimal two's complement.
    public static func integer(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        var v = value
        repeat { bytes.insert(UInt8(v & 0xFF), at: 0); v >>= 8 } while v > 0
        if bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return tlv(0x02, bytes)
    }

    /// OBJECT IDENTIFIER from dotted text ("1.2.840.113635.100.8.2"); nil when not a valid OID.
    public static func objectIdentifier(_ dotted: String) -> [UInt8]? {
        let arcs = dotted.split(separator: ".", omittingEmptySubsequences: false).map { UInt64($0) }
        guard arcs.count >= 2, arcs.allSatisfy({ $0 != nil }) else { return nil }
        let values = arcs.map { $0! }
        guard values[0] <= 2, values[0] == 2 || values[1] < 40 else { return nil }
        let (first, overflow) = (values[0] * 40).addingReportingOverflow(values[1])
        guard !overflow else { return nil }
        var content: [UInt8] = []
        for arc in [first] + values.dropFirst(2) {
            var chunk: [UInt8] = [UInt8(arc & 0x7F)]
            var v = arc >> 7
            while v > 0 { chunk.insert(UInt8(v & 0x7F) | 0x80, at: 0); v >>= 7 }
            content += chunk
        }
        return tlv(0x06, content)
    }

    /// BIT STRING of named bits (bit 0 = most significant bit of the first byte), DER-minimal:
    /// trailing zero bits removed and counted as unused bits.
    public static func namedBits(_ bits: [Int]) -> [UInt8] {
        guard let highest = bits.max() else { return [0x03, 0x01, 0x00] }
        var bytes = [UInt8](repeating: 0, count: highest / 8 + 1)
        for bit in bits where bit >= 0 { bytes[bit / 8] |= 0x80 >> UInt8(bit % 8) }
        let unused = UInt8(7 - highest % 8)
        return tlv(0x03, [unused] + bytes)
    }
}
