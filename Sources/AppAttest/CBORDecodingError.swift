/// Why a CBOR input was refused; maps to reason code `cbor_malformed`.
public struct CBORDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// Byte offset of the offending item.
    public let offset: Int

    init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "CBOR: \(message) at offset \(offset)" }
}
