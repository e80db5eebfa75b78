import CHiredis

/// Builds one Redis command from binary-safe arguments and encodes it as RESP with hiredis'
/// `redisFormatCommandArgv` (hiredis.h). Arguments are appended as bytes into one contiguous buffer (no
/// per-argument allocation, no Foundation strings), then framed in a single call.
struct RedisCommand {
    private var buffer: [UInt8] = []
    private var ends: [Int] = []

    /// An empty command with room for `capacity` argument bytes.
    init(capacity: Int = 256) { buffer.reserveCapacity(capacity); ends.reserveCapacity(12) }

    /// Appends an argument given as bytes.
    mutating func append<Bytes: Sequence>(_ bytes: Bytes) where Bytes.Element == UInt8 {
        buffer.append(contentsOf: bytes)
        ends.append(buffer.count)
    }

    /// Appends an ASCII argument.
    mutating func append(_ text: StaticString) {
        append(UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    /// Appends the concatenation of several byte runs as one argument (e.g. a key name).
    mutating func appendJoined(_ parts: [UInt8]...) {
        for part in parts { buffer.append(contentsOf: part) }
        ends.append(buffer.count)
    }

    /// Appends a signed integer as ASCII decimal.
    mutating func append(decimal value: Int64) {
        RedisCommand.appendDecimal(value, to: &buffer)
        ends.append(buffer.count)
    }

    /// Appends every argument of `other`, in order.
    mutating func appendArguments(of other: RedisCommand) {
        let base = buffer.count
        buffer.append(contentsOf: other.buffer)
        for end in other.ends { ends.append(base + end) }
    }

    /// Number of arguments so far.
    var count: Int { ends.count }

    /// The RESP encoding (`*<n>\r\n$<len>\r\n<bytes>\r\n...`), or nil if hiredis failed to allocate.
    func encoded() -> [UInt8]? {
        if ends.isEmpty { return nil }
        var storage = buffer
        if storage.isEmpty { storage.append(0) }  // a valid base address even when every argument is empty
        let count = ends.count
        // argv and lengths live in scratch space for the call (no arrays per command).
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { lengths -> [UInt8]? in
            withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: count) { argv -> [UInt8]? in
                storage.withUnsafeBufferPointer { base -> [UInt8]? in
                    guard let origin = base.baseAddress else { return nil }
                    var start = 0
                    for i in 0..<count {
                        lengths[i] = ends[i] - start
                        argv[i] = UnsafeRawPointer(origin + start).assumingMemoryBound(to: CChar.self)
                        start = ends[i]
                    }
                    var target: UnsafeMutablePointer<CChar>?
                    let length = redisFormatCommandArgv(&target, Int32(count), argv.baseAddress, lengths.baseAddress)
                    guard length > 0, let target else { return nil }
                    defer { redisFreeCommand(target) }
                    return Array(UnsafeRawBufferPointer(start: target, count: Int(length)))
                }
            }
        }
    }

    /// Appends `value` in ASCII decimal to `out` without going through String.
    static func appendDecimal(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(0x2d) }
        var magnitude = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[count] = UInt8(magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            } while magnitude > 0
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(raw[i]) }
        }
    }

    /// Parses ASCII decimal bytes (optional leading `-`) strictly; nil on anything else or overflow.
    static func parseDecimal<Bytes: Collection>(_ bytes: Bytes) -> Int64? where Bytes.Element == UInt8 {
        var iterator = bytes.makeIterator()
        guard var byte = iterator.next() else { return nil }
        let negative = byte == 0x2d
        if negative { guard let next = iterator.next() else { return nil }; byte = next }
        var value: Int64 = 0
        var more: UInt8? = byte
        while let digit = more {
            guard digit >= 0x30 && digit <= 0x39 else { return nil }
            let (times, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(Int64(digit - 0x30))
            if o1 || o2 { return nil }
            value = sum
            more = iterator.next()
        }
        return negative ? -value : value
    }
}
