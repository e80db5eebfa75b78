extension Base64URL {
    /// Decodes unpadded base64url (RFC 4648 section 5) as `encode` writes it, strictly: only the
    /// URL-safe alphabet, no padding, no whitespace, unused trailing bits zero. nil otherwise. For names
    /// the store wrote itself (e.g. the members of the receipt refresh schedule).
    public static func decode<Bytes: Collection>(_ input: Bytes) -> [UInt8]? where Bytes.Element == UInt8 {
        func value(_ c: UInt8) -> UInt32? {
            switch c {
            case 0x41...0x5A: return UInt32(c - 0x41)
            case 0x61...0x7A: return UInt32(c - 0x61 + 26)
            case 0x30...0x39: return UInt32(c - 0x30 + 52)
            case 0x2D: return 62
            case 0x5F: return 63
            default: return nil
            }
        }
        guard input.count % 4 != 1 else { return nil }
        var out = [UInt8]()
        out.reserveCapacity(input.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for c in input {
            guard let v = value(c) else { return nil }
            accumulator = accumulator << 6 | v
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
                accumulator &= (1 << UInt32(bits)) - 1
            }
        }
        guard accumulator == 0 else { return nil }
        return out
    }
}
