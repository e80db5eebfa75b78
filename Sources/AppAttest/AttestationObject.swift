/// The decoded top level of an App Attest attestation object (CBOR, WebAuthn layout):
/// `{"fmt": "apple-appattest", "attStmt": {"x5c": [leaf, intermediate], "receipt": bytes}, "authData": bytes}`.
/// Unknown keys are ignored; the known ones must have these types.
public struct AttestationObject: Sendable {
    /// `fmt`.
    public let fmt: String
    /// `attStmt.x5c`: DER certificates, leaf first.
    public let x5c: [[UInt8]]
    /// `attStmt.receipt`, if present.
    public let receipt: [UInt8]?
    /// `authData`, raw.
    public let authData: [UInt8]

    /// Decodes `bytes` with the strict CBOR decoder.
    /// - Throws: `AppAttestError` with `.cborMalformed` or `.attestationMalformed`.
    public init(_ bytes: [UInt8]) throws {
        let value: CBORValue
        do {
            value = try CBORDecoder().decode(bytes)
        } catch {
            throw AppAttestError(.cborMalformed, "\(error)")
        }
        try self.init(decoded: value)
    }

    init(decoded value: CBORValue) throws {
        guard value.mapValue != nil else { throw AppAttestError(.attestationMalformed, "not a CBOR map") }
        guard let fmt = value["fmt"]?.textValue else { throw AppAttestError(.attestationMalformed, "fmt missing or not text") }
        guard let statement = value["attStmt"], statement.mapValue != nil else { throw AppAttestError(.attestationMalformed, "attStmt missing or not a map") }
        guard let authData = value["authData"]?.bytesValue else { throw AppAttestError(.attestationMalformed, "authData missing or not bytes") }
        guard let chain = statement["x5c"]?.arrayValue else { throw AppAttestError(.attestationMalformed, "x5c missing or not an array") }
        var certificates: [[UInt8]] = []
        for item in chain {
            guard let der = item.bytesValue else { throw AppAttestError(.attestationMalformed, "x5c element is not bytes") }
            certificates.append(der)
        }
        var receipt: [UInt8]? = nil
        if let r = statement["receipt"] {
            guard let bytes = r.bytesValue else { throw AppAttestError(.attestationMalformed, "receipt is not bytes") }
            receipt = bytes
        }
        self.fmt = fmt
        self.x5c = certificates
        self.receipt = receipt
        self.authData = authData
    }
}
