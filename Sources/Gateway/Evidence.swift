/// The App Attest evidence fields a request carried (raw header values, before decoding).
///
/// Each value is a slice of the received header bytes (no copy per field): it keeps the request's
/// header storage alive while held, which the request does anyway until it is answered.
struct Evidence: Sendable {
    /// `App-Attest-Key-Id` value (base64 of the 32-byte keyId).
    var keyId: ArraySlice<UInt8>?
    /// `App-Attest-Challenge` value (base64 of the challenge bytes).
    var challenge: ArraySlice<UInt8>?
    /// `App-Attest-Assertion` value (base64 of the CBOR assertion).
    var assertion: ArraySlice<UInt8>?
    /// `App-Attest-Client-Data` value (base64; diagnostics only, must equal the rebuilt client data).
    var clientData: ArraySlice<UInt8>?
    /// `App-Attest-Signature` value (base64 DER ECDSA by a device key over the client data).
    var signature: ArraySlice<UInt8>?
    /// The configured name of an evidence field that appeared more than once, if any.
    var duplicated: String?

    /// Records one field into `slot`, noting a duplicate (`name`: the field's configured name).
    @inline(__always)
    mutating func set(_ slot: inout ArraySlice<UInt8>?, _ value: ArraySlice<UInt8>, name: String) {
        if slot != nil, duplicated == nil { duplicated = name }
        slot = value
    }

    /// True when none of the evidence fields was present.
    var isEmpty: Bool { keyId == nil && challenge == nil && assertion == nil && clientData == nil && signature == nil }
}
