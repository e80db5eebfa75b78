/// An EC2 P-256 COSE_Key (RFC 9052 section 7, RFC 9053 section 7.1) as found in App Attest
/// authenticatorData: `{1: 2 (EC2), 3: -7 (ES256, optional), -1: 1 (P-256), -2: x, -3: y}`.
public struct COSEKey: Sendable, Equatable {
    /// X coordinate (32 bytes).
    public let x: [UInt8]
    /// Y coordinate (32 bytes).
    public let y: [UInt8]

    /// The uncompressed point `04 || x || y`.
    public var x963Representation: [UInt8] { [0x04] + x + y }

    /// Reads a decoded COSE_Key map; refuses other key types, curves, algorithms or coordinate sizes.
    init(_ value: CBORValue) throws {
        guard value.mapValue != nil else { throw AuthenticatorDataError("COSE key is not a map") }
        guard value[intKey: 1]?.integerValue == 2 else { throw AuthenticatorDataError("COSE key type is not EC2") }
        if let alg = value[intKey: 3] { guard alg.integerValue == -7 else { throw AuthenticatorDataError("COSE algorithm is not ES256") } }
        guard value[intKey: -1]?.integerValue == 1 else { throw AuthenticatorDataError("COSE curve is not P-256") }
        guard let x = value[intKey: -2]?.bytesValue, x.count == 32, let y = value[intKey: -3]?.bytesValue, y.count == 32 else {
            throw AuthenticatorDataError("COSE coordinates are not 32-byte strings")
        }
        self.x = x
        self.y = y
    }
}
