/// One X.509 v3 extension (RFC 5280 section 4.1): OID, criticality and the raw DER of `extnValue`
/// (the contents of the OCTET STRING, i.e. the extension's own DER encoding).
public struct X509Extension: Sendable, Equatable {
    /// Dotted OID, e.g. "1.2.840.113635.100.8.2" (Apple App Attest nonce).
    public let oid: String
    /// The critical flag.
    public let isCritical: Bool
    /// DER bytes of the extension value.
    public let value: [UInt8]

    /// An extension value as given.
    public init(oid: String, isCritical: Bool, value: [UInt8]) {
        self.oid = oid
        self.isCritical = isCritical
        self.value = value
    }
}
