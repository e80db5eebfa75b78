/// Redis Cluster key slots (Redis Cluster specification, "Keys distribution model"): a key's slot is
/// `CRC16(key) mod 16384`, where only the part inside the first `{...}` is hashed when that part is
/// non-empty (the hash tag). The gateway's keys carry `{<keyId>}`, so every record of one App Attest
/// key lives in one slot and each Lua script touches one slot.
///
/// CRC16 is the XMODEM variant the specification names: polynomial 0x1021, initial value 0, no
/// reflection, no final XOR (`CRC16("123456789") == 0x31C3`).
enum RedisClusterSlot {
    /// Number of slots in a Redis Cluster.
    static let count = 16_384

    /// The slot of `key` (0..<16384).
    static func of(key: [UInt8]) -> Int {
        if let open = key.firstIndex(of: 0x7b) {  // "{"
            let afterOpen = open + 1
            if let close = key[afterOpen...].firstIndex(of: 0x7d), close > afterOpen {  // "}" with something between
                return Int(crc16(key[afterOpen..<close]) & 0x3fff)
            }
        }
        return Int(crc16(key) & 0x3fff)
    }

    /// CRC16/XMODEM of `bytes`.
    static func crc16<Bytes: Sequence>(_ bytes: Bytes) -> UInt16 where Bytes.Element == UInt8 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int((crc >> 8) ^ UInt16(byte))]
        }
        return crc
    }

    private static let table: [UInt16] = (0..<256).map { index -> UInt16 in
        var crc = UInt16(index) << 8
        for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        return crc
    }
}
