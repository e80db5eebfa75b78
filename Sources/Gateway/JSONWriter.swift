/// A small append-only JSON writer for the gateway's own answers and log lines: builds UTF-8 bytes
/// directly (no Foundation, no intermediate dictionaries), escaping strings per RFC 8259 section 7.
struct JSONWriter {
    /// The bytes written so far.
    private(set) var bytes: [UInt8] = []
    private var needsComma = false

    init(capacity: Int = 128) { bytes.reserveCapacity(capacity) }

    mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }

    mutating func field(_ name: String, _ value: String) { key(name); string(value); needsComma = true }
    mutating func field(_ name: String, _ value: Int64) { key(name); bytes.append(contentsOf: String(value).utf8); needsComma = true }
    mutating func field(_ name: String, _ value: Int) { field(name, Int64(value)) }
    mutating func field(_ name: String, _ value: Bool) { key(name); bytes.append(contentsOf: (value ? "true" : "false").utf8); needsComma = true }
    mutating func field(_ name: String, _ value: Double, decimals: Int) {
        key(name)
        bytes.append(contentsOf: JSONWriter.format(value, decimals: decimals).utf8)
        needsComma = true
    }
    mutating func nullField(_ name: String) { key(name); bytes.append(contentsOf: "null".utf8); needsComma = true }
    /// Starts a nested object as the value of `name`.
    mutating func beginObject(_ name: String) { key(name); bytes.append(UInt8(ascii: "{")); needsComma = false }

    private mutating func separator() { if needsComma { bytes.append(UInt8(ascii: ",")) } }
    private mutating func key(_ name: String) { separator(); string(name); bytes.append(UInt8(ascii: ":")) }

    private mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: bytes.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex: [UInt8] = Array("0123456789abcdef".utf8)
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Fixed-point formatting without Foundation (`decimals` digits after the point).
    static func format(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9.0e15 else { return String(Int64(value)) }
        let whole = Int64(scaled)
        let sign = value < 0 && whole != 0 ? "-" : ""
        let factor = Int64(scale)
        var fraction = String(whole % factor)
        while fraction.count < decimals { fraction = "0" + fraction }
        return decimals == 0 ? "\(sign)\(whole)" : "\(sign)\(whole / factor).\(fraction)"
    }
}
