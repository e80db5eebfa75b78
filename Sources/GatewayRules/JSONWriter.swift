/// The project's one JSON writer (RFC 8259): the gateway's answers and access log, the lifecycle lines
/// of `attest-gateway`, everything `attestctl` prints or sends. Append-only: it builds UTF-8 bytes
/// directly (no Foundation, no intermediate dictionaries), so the per-request answers and log lines
/// cost one buffer.
///
///     var json = JSONWriter()
///     json.beginObject()
///     json.field("error", "bad_signature")
///     json.beginArray("checks"); json.value("chain"); json.endArray()
///     json.endObject()
///     json.bytes   // {"error":"bad_signature","checks":["chain"]}
///
/// - Strings (keys and values) are escaped per RFC 8259 section 7: `"` and `\` with a backslash,
///   line feed, carriage return and tab as `\n`, `\r`, `\t`, every other control character
///   U+0000...U+001F as `\u00XX`; everything else, non-ASCII included, is written as its UTF-8 bytes.
/// - Integers are written in decimal; a `Double` either in its shortest round-trip form
///   (`value(_:)`, `field(_:_:)`) or in fixed point (`decimals:`). JSON has no NaN or infinity:
///   non-finite doubles are written `null`.
/// - `pretty`: two-space indentation, one member or element per line, `"key": value`, empty
///   containers as `{}` and `[]` (attestctl's human-readable output). Compact otherwise.
///
/// The caller balances `begin...` and `end...` and writes keys only inside objects (not checked).
public struct JSONWriter: Sendable {
    /// The bytes written so far (UTF-8).
    public private(set) var bytes: [UInt8] = []
    private let pretty: Bool
    private var depth = 0
    /// Whether the current container already holds a member (a comma is due before the next one).
    private var needsComma = false

    /// An empty writer; `capacity` is a hint in bytes.
    public init(capacity: Int = 128, pretty: Bool = false) {
        self.pretty = pretty
        bytes.reserveCapacity(capacity)
    }

    /// The text written so far.
    public var text: String { String(decoding: bytes, as: UTF8.self) }

    // MARK: Containers

    /// Starts an object (at the top level or as an array element).
    public mutating func beginObject() { separator(); open(UInt8(ascii: "{")) }
    /// Starts an object as the value of `name`.
    public mutating func beginObject(_ name: String) { key(name); open(UInt8(ascii: "{")) }
    /// Ends the current object.
    public mutating func endObject() { close(UInt8(ascii: "}")) }
    /// Starts an array (at the top level or as an array element).
    public mutating func beginArray() { separator(); open(UInt8(ascii: "[")) }
    /// Starts an array as the value of `name`.
    public mutating func beginArray(_ name: String) { key(name); open(UInt8(ascii: "[")) }
    /// Ends the current array.
    public mutating func endArray() { close(UInt8(ascii: "]")) }

    // MARK: Object members

    /// `"name": "value"`.
    public mutating func field(_ name: String, _ value: String) { key(name); string(value); needsComma = true }
    /// `"name": value` (decimal).
    public mutating func field(_ name: String, _ value: Int64) { key(name); integer(value); needsComma = true }
    /// `"name": value` (decimal).
    public mutating func field(_ name: String, _ value: Int) { field(name, Int64(value)) }
    /// `"name": true` or `false`.
    public mutating func field(_ name: String, _ value: Bool) { key(name); boolean(value); needsComma = true }
    /// `"name": value` in its shortest round-trip form (`null` when not finite).
    public mutating func field(_ name: String, _ value: Double) { key(name); double(value); needsComma = true }
    /// `"name": value` with exactly `decimals` digits after the point (`null` when not finite).
    public mutating func field(_ name: String, _ value: Double, decimals: Int) {
        key(name)
        append(JSONWriter.format(value, decimals: decimals))
        needsComma = true
    }
    /// `"name": null`.
    public mutating func nullField(_ name: String) { key(name); append("null"); needsComma = true }

    // MARK: Array elements (or a top-level value)

    /// A string element.
    public mutating func value(_ value: String) { separator(); string(value); needsComma = true }
    /// An integer element.
    public mutating func value(_ value: Int64) { separator(); integer(value); needsComma = true }
    /// An integer element.
    public mutating func value(_ value: Int) { self.value(Int64(value)) }
    /// A boolean element.
    public mutating func value(_ value: Bool) { separator(); boolean(value); needsComma = true }
    /// A number element in its shortest round-trip form (`null` when not finite).
    public mutating func value(_ value: Double) { separator(); double(value); needsComma = true }
    /// A `null` element.
    public mutating func nullValue() { separator(); append("null"); needsComma = true }

    // MARK: Helpers

    /// `text` as a JSON string literal, quotes included (RFC 8259 section 7).
    public static func quoted(_ text: String) -> String {
        var writer = JSONWriter(capacity: text.utf8.count + 2)
        writer.string(text)
        return writer.text
    }

    /// Fixed-point formatting without Foundation: `decimals` digits after the point; `null` when
    /// `value` is not finite.
    public static func format(_ value: Double, decimals: Int) -> String {
        guard value.isFinite else { return "null" }
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

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        depth += 1
        needsComma = false
    }

    private mutating func close(_ bracket: UInt8) {
        depth -= 1
        if pretty && needsComma { newline() }
        bytes.append(bracket)
        needsComma = true
    }

    private mutating func separator() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        if pretty && depth > 0 { newline() }
    }

    private mutating func newline() {
        bytes.append(0x0A)
        for _ in 0..<(2 * depth) { bytes.append(0x20) }
    }

    private mutating func key(_ name: String) {
        separator()
        string(name)
        bytes.append(UInt8(ascii: ":"))
        if pretty { bytes.append(0x20) }
    }

    private mutating func append(_ text: String) { bytes.append(contentsOf: text.utf8) }
    private mutating func integer(_ value: Int64) { append(String(value)) }
    private mutating func boolean(_ value: Bool) { append(value ? "true" : "false") }
    private mutating func double(_ value: Double) { append(value.isFinite ? String(value) : "null") }

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
                bytes.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, JSONWriter.hexDigits[Int(byte >> 4)],
                                          JSONWriter.hexDigits[Int(byte & 0xF)]])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
