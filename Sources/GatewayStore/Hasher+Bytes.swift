extension Hasher {
    /// Feeds `bytes` to the hasher in one call: the count, then the bytes as one block
    /// (`combine(bytes:)`). `combine(bytes)` on an `[UInt8]` would feed them one `UInt8` at a time,
    /// about 22 instructions each: 700 per 32-byte keyId, looked up several times per enforced request.
    /// Hashes of the binary identifiers (`KeyID`, `Challenge`, `AccountHash`); equal byte arrays hash
    /// alike, which is all `Hashable` asks.
    mutating func combine(contentsOf bytes: [UInt8]) {
        combine(bytes.count)
        bytes.withUnsafeBytes { combine(bytes: $0) }
    }
}
