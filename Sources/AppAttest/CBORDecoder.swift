/// Strict CBOR decoder (RFC 8949) for App Attest objects.
///
/// Accepted: definite-length items of major types 0-5 and the simple values false, true, null,
/// undefined. Refused (`CBORDecodingError`): indefinite lengths, tags (major 6), floats and other
/// simple values, reserved additional-information values, invalid UTF-8 in text, duplicate map keys
/// (compared by decoded value), lengths or counts beyond the remaining input, nesting deeper than
/// `Limits.maxDepth`, containers larger than `Limits.maxItems`, inputs longer than
/// `Limits.maxInputLength`, and - for `decode` - any byte after the top-level item. Non-shortest
/// length encodings are accepted (Apple's encoder is not required to be canonical) but bounded.
public struct CBORDecoder: Sendable {
    /// Resource limits applied while decoding.
    public struct Limits: Sendable {
        /// Maximum nesting depth of arrays/maps (the top-level item is depth 1).
        public var maxDepth: Int
        /// Maximum element count of one array or map.
        public var maxItems: Int
        /// Maximum input length in bytes.
        public var maxInputLength: Int

        /// Limits for App Attest objects: depth 8, 1024 items, 256 KiB.
        public static let appAttest = Limits(maxDepth: 8, maxItems: 1024, maxInputLength: 256 * 1024)

        /// Custom limits.
        public init(maxDepth: Int, maxItems: Int, maxInputLength: Int) {
            self.maxDepth = maxDepth
            self.maxItems = maxItems
            self.maxInputLength = maxInputLength
        }
    }

    /// The limits in force.
    public let limits: Limits

    /// A decoder with `limits` (default `.appAttest`).
    public init(limits: Limits = .appAttest) { self.limits = limits }

    /// Decodes exactly one item that spans all of `bytes`.
    public func decode(_ bytes: [UInt8]) throws -> CBORValue {
        let (value, end) = try decodePrefix(bytes, from: 0)
        guard end == bytes.count else { throw CBORDecodingError("\(bytes.count - end) trailing bytes after the CBOR item", offset: end) }
        return value
    }

    /// Decodes one item starting at `offset`; returns it and the offset just after it
    /// (for items embedded in other structures, e.g. the COSE key inside authenticatorData).
    public func decodePrefix(_ bytes: [UInt8], from offset: Int) throws -> (value: CBORValue, end: Int) {
        guard bytes.count <= limits.maxInputLength else { throw CBORDecodingError("input longer than \(limits.maxInputLength) bytes", offset: 0) }
        guard offset >= 0, offset <= bytes.count else { throw CBORDecodingError("offset out of range", offset: offset) }
        return try bytes.withUnsafeBufferPointer { buffer in
            var cursor = Cursor(buffer: buffer, index: offset, limits: limits)
            let value = try cursor.item(depth: 1)
            return (value, cursor.index)
        }
    }

    /// The entries of a top-level map whose keys are all ASCII text strings and whose values are all
    /// byte strings - the shape of an App Attest assertion - as byte ranges of `bytes`, without
    /// building `CBORValue`s (an assertion is decoded on every protected request).
    ///
    /// Returns nil when `bytes` has any other shape or would be refused: more than `maxEntries`
    /// entries, a key that is not an ASCII text string, a value that is not a byte string, an
    /// indefinite length, a duplicate key, trailing bytes, a limit exceeded. Then `decode` gives the
    /// answer (or its error). For every input this accepts, `decode` accepts it too and returns the
    /// same entries in the same order: lengths are read and bounded exactly as `decode` does, and
    /// ASCII keys are equal as bytes exactly when they are equal as strings.
    public func decodeFlatByteStringMap(_ bytes: [UInt8], maxEntries: Int = 8) -> [(key: Range<Int>, value: Range<Int>)]? {
        guard bytes.count <= limits.maxInputLength, limits.maxDepth >= 1 else { return nil }
        return bytes.withUnsafeBufferPointer { buffer -> [(key: Range<Int>, value: Range<Int>)]? in
            var index = 0
            /// Major type and argument of the head at `index`, or nil (reserved, indefinite, truncated).
            func head() -> (major: UInt8, argument: UInt64)? {
                guard index < buffer.count else { return nil }
                let initial = buffer[index]
                index += 1
                let info = initial & 0x1F
                switch info {
                case 0..<24: return (initial >> 5, UInt64(info))
                case 24, 25, 26, 27:
                    let width = 1 << Int(info - 24)
                    guard buffer.count - index >= width else { return nil }
                    var value: UInt64 = 0
                    for _ in 0..<width { value = value << 8 | UInt64(buffer[index]); index += 1 }
                    return (initial >> 5, value)
                default: return nil
                }
            }
            /// A string of `major` whose bytes must fit in what remains.
            func string(_ major: UInt8) -> Range<Int>? {
                guard let (m, length) = head(), m == major, length <= UInt64(buffer.count - index) else { return nil }
                let range = index..<(index + Int(length))
                index += Int(length)
                return range
            }
            guard let (major, count) = head(), major == 5, count <= UInt64((buffer.count - index) / 2),
                  count <= UInt64(limits.maxItems), count <= UInt64(maxEntries) else { return nil }
            var entries: [(key: Range<Int>, value: Range<Int>)] = []
            entries.reserveCapacity(Int(count))
            for _ in 0..<Int(count) {
                guard let key = string(3), buffer[key].allSatisfy({ $0 < 0x80 }) else { return nil }
                for earlier in entries where buffer[earlier.key].elementsEqual(buffer[key]) { return nil }
                guard let value = string(2) else { return nil }
                entries.append((key, value))
            }
            return index == buffer.count ? entries : nil
        }
    }

    private struct Cursor {
        let buffer: UnsafeBufferPointer<UInt8>
        var index: Int
        let limits: Limits

        var remaining: Int { buffer.count - index }

        mutating func byte() throws -> UInt8 {
            guard index < buffer.count else { throw CBORDecodingError("truncated", offset: index) }
            defer { index += 1 }
            return buffer[index]
        }

        /// Reads the argument for additional information `info` (0...27).
        mutating func argument(_ info: UInt8, at start: Int) throws -> UInt64 {
            switch info {
            case 0..<24: return UInt64(info)
            case 24, 25, 26, 27:
                let width = 1 << Int(info - 24)
                guard remaining >= width else { throw CBORDecodingError("truncated argument", offset: start) }
                var value: UInt64 = 0
                for _ in 0..<width { value = value << 8 | UInt64(buffer[index]); index += 1 }
                return value
            case 31: throw CBORDecodingError("indefinite length is not allowed", offset: start)
            default: throw CBORDecodingError("reserved additional information \(info)", offset: start)
            }
        }

        /// A length or count argument that must fit in what remains (each element takes >= 1 byte).
        mutating func boundedCount(_ info: UInt8, at start: Int, perElement: Int) throws -> Int {
            let value = try argument(info, at: start)
            guard value <= UInt64(remaining / perElement) else {
                throw CBORDecodingError("length \(value) exceeds the remaining \(remaining) bytes", offset: start)
            }
            return Int(value)
        }

        mutating func item(depth: Int) throws -> CBORValue {
            let start = index
            let initial = try byte()
            let major = initial >> 5
            let info = initial & 0x1F
            switch major {
            case 0:
                return .unsigned(try argument(info, at: start))
            case 1:
                return .negative(try argument(info, at: start))
            case 2, 3:
                let length = try boundedCount(info, at: start, perElement: 1)
                let slice = UnsafeBufferPointer(rebasing: buffer[index..<(index + length)])
                index += length
                if major == 2 { return .bytes(Array(slice)) }
                guard let text = String(validating: slice, as: UTF8.self) else {
                    throw CBORDecodingError("text string is not valid UTF-8", offset: start)
                }
                return .text(text)
            case 4:
                guard depth <= limits.maxDepth else { throw CBORDecodingError("nesting deeper than \(limits.maxDepth)", offset: start) }
                let count = try boundedCount(info, at: start, perElement: 1)
                guard count <= limits.maxItems else { throw CBORDecodingError("array of \(count) items exceeds \(limits.maxItems)", offset: start) }
                var items: [CBORValue] = []
                items.reserveCapacity(count)
                for _ in 0..<count { items.append(try item(depth: depth + 1)) }
                return .array(items)
            case 5:
                guard depth <= limits.maxDepth else { throw CBORDecodingError("nesting deeper than \(limits.maxDepth)", offset: start) }
                let count = try boundedCount(info, at: start, perElement: 2)
                guard count <= limits.maxItems else { throw CBORDecodingError("map of \(count) entries exceeds \(limits.maxItems)", offset: start) }
                var entries: [CBORMapEntry] = []
                entries.reserveCapacity(count)
                var seen = Set<CBORValue>(minimumCapacity: count)
                for _ in 0..<count {
                    let keyOffset = index
                    let key = try item(depth: depth + 1)
                    guard seen.insert(key).inserted else { throw CBORDecodingError("duplicate map key", offset: keyOffset) }
                    let value = try item(depth: depth + 1)
                    entries.append(CBORMapEntry(key: key, value: value))
                }
                return .map(entries)
            case 6:
                throw CBORDecodingError("tags are not allowed", offset: start)
            default:
                switch info {
                case 20: return .bool(false)
                case 21: return .bool(true)
                case 22: return .null
                case 23: return .undefined
                case 25, 26, 27: throw CBORDecodingError("floating-point values are not allowed", offset: start)
                case 31: throw CBORDecodingError("unexpected break", offset: start)
                default: throw CBORDecodingError("simple value \(info) is not allowed", offset: start)
                }
            }
        }
    }
}
