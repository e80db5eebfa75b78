import GatewayRules

/// Writing a `JSONText` document through the one JSON writer.
extension JSONWriter {
    /// Writes `value` as the next element (or the whole document).
    mutating func write(_ value: JSONText) {
        switch value {
        case .string(let s): self.value(s)
        case .number(let d): self.value(d)
        case .integer(let i): self.value(i)
        case .bool(let b): self.value(b)
        case .null: nullValue()
        case .array(let items):
            beginArray()
            for item in items { write(item) }
            endArray()
        case .object(let members):
            beginObject()
            for (name, member) in members { write(member, as: name) }
            endObject()
        }
    }

    /// Writes `value` as the member `name` of the current object.
    mutating func write(_ value: JSONText, as name: String) {
        switch value {
        case .string(let s): field(name, s)
        case .number(let d): field(name, d)
        case .integer(let i): field(name, i)
        case .bool(let b): field(name, b)
        case .null: nullField(name)
        case .array(let items):
            beginArray(name)
            for item in items { write(item) }
            endArray()
        case .object(let members):
            beginObject(name)
            for (member, inner) in members { write(inner, as: member) }
            endObject()
        }
    }
}
