/// Why an ASN.1 input was refused.
public struct ASN1Error: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong.
    public let message: String
    /// Byte offset of the offending element.
    public let offset: Int

    init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    public var description: String { "ASN.1: \(message) at offset \(offset)" }
}
