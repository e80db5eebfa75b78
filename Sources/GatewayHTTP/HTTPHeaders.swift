// Ordered, case-preserving HTTP field list with case-insensitive lookup (RFC 9110 section 5).

import GatewayIO

/// An ordered list of HTTP fields (header or trailer section), RFC 9110 section 5.
///
/// - Order and the received case of names are preserved; several fields with the same name are kept
///   as separate entries (RFC 9110 section 5.2), in order.
/// - Names are matched case-insensitively (ASCII, RFC 9110 section 5.1).
/// - Storage is byte-efficient: all names and values live in one contiguous `[UInt8]`, each field is
///   four 32-bit offsets. No `String` is built unless a `String` accessor is used.
/// - Mutations validate their input: names must be tokens (RFC 9110 section 5.6.2), values must not
///   contain CR, LF, NUL or other control bytes except HTAB (RFC 9110 section 5.5). A rejected mutation
///   throws `HTTPHeaders.FieldError` and leaves the list unchanged, so a handler can never inject a
///   header line.
public struct HTTPHeaders: Sendable {
    /// Why a field was refused by `add` / `replaceOrAdd`.
    public enum FieldError: Error, Sendable, Equatable {
        /// The name is empty or contains a byte that is not a `tchar` (RFC 9110 section 5.6.2).
        case invalidName
        /// The value contains CR, LF, NUL or another control byte other than HTAB (RFC 9110 section 5.5).
        case invalidValue
        /// The list would exceed 4 GiB of name and value bytes.
        case tooLarge
    }

    @usableFromInline struct Slot: Sendable, Equatable {
        @usableFromInline var nameStart: UInt32
        @usableFromInline var nameLength: UInt32
        @usableFromInline var valueStart: UInt32
        @usableFromInline var valueLength: UInt32
    }

    @usableFromInline var storage: [UInt8]
    @usableFromInline var slots: [Slot]
    /// Bytes in `storage` no longer referenced by a slot (after removals).
    @usableFromInline var garbage: Int = 0

    /// An empty list.
    public init() {
        storage = []
        slots = []
    }

    /// An empty list with room for `fields` fields and `bytes` bytes of names and values.
    public init(reservingFields fields: Int, bytes: Int) {
        storage = []
        slots = []
        storage.reserveCapacity(bytes)
        slots.reserveCapacity(fields)
    }

    /// A list holding `pairs` (name, value) in order.
    /// - Throws: `FieldError` for the first invalid pair.
    public init(_ pairs: [(String, String)]) throws {
        self.init()
        for (name, value) in pairs { try add(name: name, value: value) }
    }

    /// Number of fields (each repeated name counts once per occurrence).
    public var count: Int { slots.count }
    /// Whether there are no fields.
    public var isEmpty: Bool { slots.isEmpty }

    // MARK: Fields

    /// One field of the list: its name as received (case preserved) and its value (OWS-trimmed when parsed).
    public struct Field: Sendable {
        @usableFromInline let storage: [UInt8]
        @usableFromInline let slot: Slot

        /// The name bytes, case as received.
        public var nameBytes: ArraySlice<UInt8> {
            storage[Int(slot.nameStart)..<Int(slot.nameStart + slot.nameLength)]
        }
        /// The value bytes.
        public var valueBytes: ArraySlice<UInt8> {
            storage[Int(slot.valueStart)..<Int(slot.valueStart + slot.valueLength)]
        }
        /// The name, case as received (decoded as UTF-8; names are ASCII tokens).
        public var name: String { String(decoding: nameBytes, as: UTF8.self) }
        /// The value (decoded as UTF-8 with replacement of invalid sequences; use `valueBytes` for the exact bytes).
        public var value: String { String(decoding: valueBytes, as: UTF8.self) }

        /// Whether the name equals `other`, ASCII case-insensitively.
        public func nameEquals(_ other: String) -> Bool {
            HTTPHeaders.withUTF8(other) { o in
                storage.withUnsafeBytes { s in
                    HTTP1Syntax.equalsCaseInsensitive(HTTPHeaders.nameBuffer(s, slot), o)
                }
            }
        }

        /// Whether the name starts with `prefix`, ASCII case-insensitively (e.g. a header family such as `App-Attest-`).
        public func nameHasPrefix(_ prefix: String) -> Bool {
            HTTPHeaders.withUTF8(prefix) { p in
                storage.withUnsafeBytes { s in
                    let n = HTTPHeaders.nameBuffer(s, slot)
                    guard n.count >= p.count else { return false }
                    return HTTP1Syntax.equalsCaseInsensitive(UnsafeRawBufferPointer(rebasing: n[0..<p.count]), p)
                }
            }
        }
    }

    /// The field at `position` (0-based, in order).
    public subscript(position: Int) -> Field { Field(storage: storage, slot: slots[position]) }

    // MARK: Lookup (case-insensitive)

    /// Whether at least one field is named `name` (case-insensitive).
    public func contains(_ name: String) -> Bool { firstIndex(name) != nil }

    /// Number of fields named `name` (case-insensitive).
    public func count(of name: String) -> Int {
        HTTPHeaders.withUTF8(name) { n in
            storage.withUnsafeBytes { s in
                var c = 0
                for slot in slots where HTTP1Syntax.equalsCaseInsensitive(HTTPHeaders.nameBuffer(s, slot), n) { c += 1 }
                return c
            }
        }
    }

    /// The value of the first field named `name` (case-insensitive), or nil.
    public func first(_ name: String) -> String? {
        guard let i = firstIndex(name) else { return nil }
        return self[i].value
    }

    /// The exact value bytes of the first field named `name` (case-insensitive), or nil.
    public func firstBytes(_ name: String) -> ArraySlice<UInt8>? {
        guard let i = firstIndex(name) else { return nil }
        return self[i].valueBytes
    }

    /// The values of every field named `name` (case-insensitive), in order.
    public func values(_ name: String) -> [String] {
        HTTPHeaders.withUTF8(name) { n in
            storage.withUnsafeBytes { s in
                var out: [String] = []
                for slot in slots where HTTP1Syntax.equalsCaseInsensitive(HTTPHeaders.nameBuffer(s, slot), n) {
                    out.append(String(decoding: HTTPHeaders.valueBuffer(s, slot), as: UTF8.self))
                }
                return out
            }
        }
    }

    /// Position of the first field named `name` (case-insensitive), or nil.
    public func firstIndex(_ name: String) -> Int? {
        HTTPHeaders.withUTF8(name) { n in
            storage.withUnsafeBytes { s in
                slots.firstIndex { HTTP1Syntax.equalsCaseInsensitive(HTTPHeaders.nameBuffer(s, $0), n) }
            }
        }
    }

    // MARK: Mutation

    /// Appends a field `name: value` at the end (other fields with the same name are kept).
    /// - Throws: `FieldError.invalidName` / `.invalidValue` / `.tooLarge`; the list is unchanged then.
    public mutating func add(name: String, value: String) throws {
        try HTTPHeaders.withUTF8(name) { n in
            try HTTPHeaders.withUTF8(value) { v in try add(nameBytes: n, valueBytes: v) }
        }
    }

    /// Appends a field from raw bytes (see `add(name:value:)`).
    /// - Throws: `FieldError`; the list is unchanged then.
    public mutating func add(name: some Collection<UInt8>, value: some Collection<UInt8>) throws {
        let n = Array(name), v = Array(value)
        try n.withUnsafeBytes { nb in try v.withUnsafeBytes { vb in try add(nameBytes: nb, valueBytes: vb) } }
    }

    /// Removes every field named `name` (case-insensitive), then appends `name: value`.
    /// - Throws: `FieldError`; the list is unchanged then.
    public mutating func replaceOrAdd(name: String, value: String) throws {
        try HTTPHeaders.withUTF8(name) { n in
            try HTTPHeaders.withUTF8(value) { v in
                try HTTPHeaders.validate(name: n, value: v)
                try ensureRoom(name: n, value: v)
                removeAllNamed(n)
                appendUnchecked(name: n, value: v)  // validated above (`add` would validate again)
            }
        }
    }

    /// Removes every field named `name` (case-insensitive, all copies).
    /// - Returns: how many fields were removed.
    @discardableResult
    public mutating func remove(_ name: String) -> Int {
        HTTPHeaders.withUTF8(name) { n in removeAllNamed(n) }
    }

    /// Removes every field whose name starts with `prefix` (case-insensitive, all copies), e.g. a
    /// gateway stripping its own header family from client input.
    /// - Returns: how many fields were removed.
    @discardableResult
    public mutating func removeAll(namePrefix prefix: String) -> Int {
        HTTPHeaders.withUTF8(prefix) { p in
            removeSlots { s, slot in
                let n = HTTPHeaders.nameBuffer(s, slot)
                return n.count >= p.count
                    && HTTP1Syntax.equalsCaseInsensitive(UnsafeRawBufferPointer(rebasing: n[0..<p.count]), p)
            }
        }
    }

    /// Removes every field for which `predicate` returns true.
    /// - Returns: how many fields were removed.
    @discardableResult
    public mutating func removeAll(where predicate: (Field) throws -> Bool) rethrows -> Int {
        // In place: nothing is allocated when nothing is removed (the common case per request).
        var write = 0
        var freed = 0
        for read in 0..<slots.count {
            let slot = slots[read]
            if try predicate(Field(storage: storage, slot: slot)) {
                freed += Int(slot.nameLength + slot.valueLength)
            } else {
                if write != read { slots[write] = slot }
                write += 1
            }
        }
        let removed = slots.count - write
        guard removed > 0 else { return 0 }
        slots.removeLast(removed)
        garbage += freed
        compactIfWasteful()
        return removed
    }

    /// Removes every field whose name bytes (case as received) satisfy `predicate`; nothing is
    /// allocated when nothing is removed. For per-request filters over raw names (a header family,
    /// the forwarding family).
    /// - Returns: how many fields were removed.
    @discardableResult
    package mutating func removeFields(whereName predicate: (UnsafeRawBufferPointer) -> Bool) -> Int {
        removeSlots { s, slot in predicate(HTTPHeaders.nameBuffer(s, slot)) }
    }

    /// Makes this list's storage its own with room for `fields` more fields and `bytes` more bytes
    /// of names and values: one copy up front instead of a copy and regrowths as fields are added
    /// to a list shared with the parsed request.
    package mutating func reserveAdditional(fields: Int, bytes: Int) {
        storage.reserveCapacity(storage.count + bytes)
        slots.reserveCapacity(slots.count + fields)
    }

    /// Appends `name: value` without validating it: only for fields the caller made itself from
    /// bytes that cannot hold a control byte (a literal token name; a value such as an IP address
    /// text, a scheme or hex digits). Anything that came from a peer goes through `add`. Debug
    /// builds check the field all the same (an assertion), so the test suite catches a misuse.
    package mutating func appendTrusted(name: StaticString, value: String) {
        var value = value
        value.withUTF8 { v in appendTrusted(name: name, value: UnsafeRawBufferPointer(v)) }
    }

    /// `appendTrusted(name:value:)` with the value's bytes.
    package mutating func appendTrusted(name: StaticString, value: UnsafeRawBufferPointer) {
        let nameBytes = UnsafeRawBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount)
        assert((try? HTTPHeaders.validate(name: nameBytes, value: value)) != nil, "appendTrusted given an invalid field")
        appendUnchecked(name: nameBytes, value: value)
    }

    // MARK: Internal (parsers, serializers)

    @inline(__always)
    static func nameBuffer(_ s: UnsafeRawBufferPointer, _ slot: Slot) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: s[Int(slot.nameStart)..<Int(slot.nameStart + slot.nameLength)])
    }

    @inline(__always)
    static func valueBuffer(_ s: UnsafeRawBufferPointer, _ slot: Slot) -> UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(rebasing: s[Int(slot.valueStart)..<Int(slot.valueStart + slot.valueLength)])
    }

    /// Calls `body` with the UTF-8 bytes of `string` without copying when the string is native.
    @inline(__always)
    static func withUTF8<R>(_ string: String, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        if let r = try string.utf8.withContiguousStorageIfAvailable({ try body(UnsafeRawBufferPointer($0)) }) {
            return r
        }
        return try Array(string.utf8).withUnsafeBytes(body)
    }

    static func validate(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        guard !name.isEmpty else { throw FieldError.invalidName }
        guard HTTP1Syntax.tokenLength(name) == name.count else { throw FieldError.invalidName }
        guard HTTP1Syntax.isFieldValue(value) else { throw FieldError.invalidValue }
    }

    mutating func add(nameBytes: UnsafeRawBufferPointer, valueBytes: UnsafeRawBufferPointer) throws {
        try HTTPHeaders.validate(name: nameBytes, value: valueBytes)
        try ensureRoom(name: nameBytes, value: valueBytes)
        appendUnchecked(name: nameBytes, value: valueBytes)
    }

    /// Throws `FieldError.tooLarge` when a field of these sizes would put the storage past the 32-bit
    /// offsets its slots hold.
    private func ensureRoom(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) throws {
        guard storage.count + name.count + value.count < Int(UInt32.max) else { throw FieldError.tooLarge }
    }

    /// Appends without validation: for parsers that validated the bytes already and enforce size limits.
    @inline(__always)
    mutating func appendUnchecked(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        let ns = UInt32(truncatingIfNeeded: storage.count)
        storage.append(contentsOf: name)
        let vs = UInt32(truncatingIfNeeded: storage.count)
        storage.append(contentsOf: value)
        slots.append(Slot(nameStart: ns, nameLength: UInt32(truncatingIfNeeded: name.count),
                          valueStart: vs, valueLength: UInt32(truncatingIfNeeded: value.count)))
    }

    @discardableResult
    mutating func removeAllNamed(_ n: UnsafeRawBufferPointer) -> Int {
        removeSlots { s, slot in HTTP1Syntax.equalsCaseInsensitive(HTTPHeaders.nameBuffer(s, slot), n) }
    }

    /// Appends the field of a parsed field line in one copy: `line` up to the value's end, so the
    /// name, the colon, the whitespace and the value (the slot points at the name and the value;
    /// the bytes between them are never read). For the HTTP/1.1 parsers, which validated the line
    /// and enforce the size limits.
    /// - Parameters:
    ///   - line: the field line without its CRLF (RFC 9112 section 5: `field-name ":" OWS field-value OWS`).
    ///   - nameLength: bytes of the name at the start of `line`.
    ///   - value: the value's range in `line`, whitespace trimmed.
    @inline(__always)
    mutating func appendUnchecked(line: UnsafeRawBufferPointer, nameLength: Int, value: Range<Int>) {
        let ns = UInt32(truncatingIfNeeded: storage.count)
        storage.append(contentsOf: UnsafeRawBufferPointer(rebasing: line[0..<value.upperBound]))
        slots.append(Slot(nameStart: ns, nameLength: UInt32(truncatingIfNeeded: nameLength),
                          valueStart: ns &+ UInt32(truncatingIfNeeded: value.lowerBound),
                          valueLength: UInt32(truncatingIfNeeded: value.count)))
    }

    /// Removes slots matching `predicate` (called with the storage bytes and the slot).
    mutating func removeSlots(_ predicate: (UnsafeRawBufferPointer, Slot) -> Bool) -> Int {
        var removed = 0
        var freed = 0
        storage.withUnsafeBytes { s in
            // Find the first match before touching `slots` (no uniqueness check, no copy when none matches).
            guard let first = slots.firstIndex(where: { predicate(s, $0) }) else { return }
            var write = first
            for read in first..<slots.count {
                let slot = slots[read]
                if predicate(s, slot) {
                    removed += 1
                    freed += Int(slot.nameLength + slot.valueLength)
                } else {
                    slots[write] = slot
                    write += 1
                }
            }
            slots.removeLast(removed)
        }
        guard removed > 0 else { return 0 }
        garbage += freed
        compactIfWasteful()
        return removed
    }

    private mutating func compactIfWasteful() {
        guard garbage > 4096 && garbage * 2 > storage.count else { return }
        var fresh = HTTPHeaders(reservingFields: slots.count, bytes: storage.count - garbage)
        storage.withUnsafeBytes { s in
            for slot in slots {
                fresh.appendUnchecked(name: HTTPHeaders.nameBuffer(s, slot), value: HTTPHeaders.valueBuffer(s, slot))
            }
        }
        self = fresh
    }

    /// Whether the field at `slot` has a name equal to the lower-case ASCII literal.
    @inline(__always)
    func slotNameIs(_ s: UnsafeRawBufferPointer, _ slot: Slot, _ literal: StaticString) -> Bool {
        HTTP1Syntax.equalsLowercaseLiteral(HTTPHeaders.nameBuffer(s, slot), literal)
    }

    /// Appends `name: value\r\n` for every field (for which `include` returns true) to `out`.
    func serialize(into out: inout [UInt8], include: (UnsafeRawBufferPointer, Slot) -> Bool = { _, _ in true }) {
        storage.withUnsafeBytes { s in
            for slot in slots where include(s, slot) {
                out.append(contentsOf: HTTPHeaders.nameBuffer(s, slot))
                out.append(HTTP1Syntax.colon)
                out.append(HTTP1Syntax.sp)
                out.append(contentsOf: HTTPHeaders.valueBuffer(s, slot))
                out.append(HTTP1Syntax.cr)
                out.append(HTTP1Syntax.lf)
            }
        }
    }
}

extension HTTPHeaders: Sequence {
    /// Iterates the fields in order.
    public struct Iterator: IteratorProtocol {
        let headers: HTTPHeaders
        var index = 0
        /// The next field, or nil at the end.
        public mutating func next() -> Field? {
            guard index < headers.slots.count else { return nil }
            defer { index += 1 }
            return headers[index]
        }
    }

    /// An iterator over the fields in order.
    public func makeIterator() -> Iterator { Iterator(headers: self) }
}

extension HTTPHeaders: Equatable {
    /// Equal when both hold the same fields (names compared case-sensitively, values byte-exact) in the same order.
    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        guard lhs.slots.count == rhs.slots.count else { return false }
        for i in 0..<lhs.slots.count {
            if lhs[i].nameBytes != rhs[i].nameBytes || lhs[i].valueBytes != rhs[i].valueBytes { return false }
        }
        return true
    }
}

extension HTTPHeaders: CustomStringConvertible {
    /// `name: value` lines, for debugging.
    public var description: String {
        map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}
