/// The App Attest evidence fields a request carried (raw header values, before decoding).
struct Evidence: Sendable {
    /// `App-Attest-Key-Id` value (base64 of the 32-byte keyId).
    var keyId: [UInt8]?
    /// `App-Attest-Challenge` value (base64 of the challenge bytes).
    var challenge: [UInt8]?
    /// `App-Attest-Assertion` value (base64 of the CBOR assertion).
    var assertion: [UInt8]?
    /// `App-Attest-Client-Data` value (base64; diagnostics only, must equal the rebuilt client data).
    var clientData: [UInt8]?
    /// `App-Attest-Signature` value (base64 DER ECDSA by a device key over the client data).
    var signature: [UInt8]?
    /// The configured name of an evidence field that appeared more than once, if any.
    var duplicated: String?

    /// Records one field, noting a duplicate.
    mutating func set(_ field: WritableKeyPath<Evidence, [UInt8]?>, _ value: [UInt8], name: String) {
        if self[keyPath: field] != nil, duplicated == nil { duplicated = name }
        self[keyPath: field] = value
    }

    /// True when none of the evidence fields was present.
    var isEmpty: Bool { keyId == nil && challenge == nil && assertion == nil && clientData == nil && signature == nil }
}
