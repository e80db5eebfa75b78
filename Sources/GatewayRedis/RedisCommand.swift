import GatewayIO

/// Builds one Redis command from binary-safe arguments and encodes it as RESP (an array of bulk
/// strings). Arguments are appended as bytes into one contiguous buffer (no per-argument allocation, no
/// Foundation strings), then framed in one pass (`encoded()`).
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
        DecimalText.append(value, to: &buffer)
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

    /// The RESP encoding (`*<n>\r\n$<len>\r\n<bytes>\r\n...`, Redis protocol spec: "Sending commands
    /// to a Redis server": an array of bulk strings), or nil for a command without arguments.
    ///
    /// Written here in one buffer sized up front rather than with hiredis' `redisFormatCommandArgv`: that
    /// call made a heap copy and one `sprintf` per argument, 7k instructions of an enforced request's
    /// 148k outside OpenSSL (callgrind, `bench/instructions`). `RedisProtocolTests` checks these bytes
    /// against `redisFormatCommandArgv` for random commands; replies are still parsed by hiredis.
    func encoded() -> [UInt8]? {
        if ends.isEmpty { return nil }
        var out = [UInt8]()
        // `*`, `$` and two CRLFs around a length of at most 19 digits: 25 bytes per argument at most.
        out.reserveCapacity(buffer.count + 25 * (ends.count + 1))
        out.append(0x2a)  // *
        DecimalText.append(Int64(ends.count), to: &out)
        out.append(0x0d); out.append(0x0a)
        buffer.withUnsafeBufferPointer { base in
            var start = 0
            for end in ends {
                out.append(0x24)  // $
                DecimalText.append(Int64(end - start), to: &out)
                out.append(0x0d); out.append(0x0a)
                out.append(contentsOf: UnsafeBufferPointer(rebasing: base[start..<end]))
                out.append(0x0d); out.append(0x0a)
                start = end
            }
        }
        return out
    }

    /// Parses ASCII decimal bytes (optional leading `-`) strictly; nil on anything else or overflow.
    static func parseDecimal<Bytes: Collection>(_ bytes: Bytes) -> Int64? where Bytes.Element == UInt8 {
        var iterator = bytes.makeIterator()
        guard var byte = iterator.next() else { return nil }
        let negative = byte == 0x2d
        if negative { guard let next = iterator.next() else { return nil }; byte = next }
        // The magnitude is gathered unsigned so that Int64.min, whose magnitude Int64 cannot hold, parses.
        var magnitude: UInt64 = 0
        var more: UInt8? = byte
        while let digit = more {
            guard digit >= 0x30 && digit <= 0x39 else { return nil }
            let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times.addingReportingOverflow(UInt64(digit - 0x30))
            if o1 || o2 { return nil }
            magnitude = sum
            more = iterator.next()
        }
        if negative { return magnitude <= Int64.min.magnitude ? Int64(truncatingIfNeeded: 0 &- magnitude) : nil }
        return magnitude <= UInt64(Int64.max) ? Int64(magnitude) : nil
    }
}
