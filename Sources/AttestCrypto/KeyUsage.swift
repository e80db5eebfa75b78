/// X.509 KeyUsage bits (RFC 5280 section 4.2.1.3).
public struct KeyUsage: OptionSet, Sendable {
    /// Bit n set = KeyUsage bit n of RFC 5280.
    public let rawValue: UInt16
    /// A set from raw bits (bit n = 1 << n, n as numbered in RFC 5280).
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    /// digitalSignature (0)
    public static let digitalSignature = KeyUsage(rawValue: 1 << 0)
    /// nonRepudiation / contentCommitment (1)
    public static let contentCommitment = KeyUsage(rawValue: 1 << 1)
    /// keyEncipherment (2)
    public static let keyEncipherment = KeyUsage(rawValue: 1 << 2)
    /// dataEncipherment (3)
    public static let dataEncipherment = KeyUsage(rawValue: 1 << 3)
    /// keyAgreement (4)
    public static let keyAgreement = KeyUsage(rawValue: 1 << 4)
    /// keyCertSign (5)
    public static let keyCertSign = KeyUsage(rawValue: 1 << 5)
    /// cRLSign (6)
    public static let cRLSign = KeyUsage(rawValue: 1 << 6)

    /// DER of the KeyUsage extension value (a minimal BIT STRING).
    var derValue: [UInt8] { DERWriter.namedBits((0..<9).filter { rawValue & (1 << $0) != 0 }) }
}
