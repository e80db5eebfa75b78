/// One key/value pair of a CBOR map.
public struct CBORMapEntry: Sendable, Hashable {
    /// The key.
    public let key: CBORValue
    /// The value.
    public let value: CBORValue

    /// A map entry.
    public init(key: CBORValue, value: CBORValue) {
        self.key = key
        self.value = value
    }
}
