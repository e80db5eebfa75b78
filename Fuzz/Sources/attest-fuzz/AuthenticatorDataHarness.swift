import AppAttest

/// `authdata`: `AuthenticatorData(_:kind:)`. Input: byte 0 bit 0 = kind (0 attestation, 1
/// assertion), then the authenticatorData bytes.
///
/// Invariants on acceptance, checked against the byte layout directly: rawBytes are the input;
/// rpIdHash / flags / counter at their offsets; attestation: AT set, aaguid, credentialId (length
/// from bytes 53-54, non-zero) and a COSE key; assertion: no credential fields; ED set implies a
/// trailing map; a trailing map is exactly one CBOR map that ends the data, with text keys and
/// signals; no trailing map means the fixed fields end the data. Refusals are
/// `AuthenticatorDataError`.
enum AuthenticatorDataHarness {
    static let harness = Harness(name: "authdata", summary: "AuthenticatorData (attestation/assertion, iOS 27 trailing map)") { run($0) }

    static func run(_ input: [UInt8]) {
        var reader = FuzzInput(input)
        let kind: AuthenticatorData.Kind = reader.u8() & 1 == 0 ? .attestation : .assertion
        let bytes = reader.rest()
        let data: AuthenticatorData
        do { data = try AuthenticatorData(bytes, kind: kind) } catch is AuthenticatorDataError { return } catch {
            Invariant.fail("authdata", "threw \(type(of: error)), not AuthenticatorDataError")
        }
        let h = "authdata"
        Invariant.check(data.rawBytes == bytes, h, "rawBytes differ from the input")
        Invariant.check(bytes.count >= 37 && data.rpIdHash == Array(bytes[0..<32]) && data.flags == bytes[32], h, "fixed fields misplaced")
        let counter = bytes[33..<37].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        Invariant.check(data.counter == counter, h, "counter is not big-endian bytes 33-36")
        var end = 37
        if kind == .attestation {
            Invariant.check(data.flags & 0x40 != 0, h, "attestation accepted without AT")
            Invariant.check(bytes.count >= 55 && data.aaguid == Array(bytes[37..<53]), h, "aaguid misplaced")
            let length = Int(bytes[53]) << 8 | Int(bytes[54])
            Invariant.check(length > 0 && data.credentialId == Array(bytes[55..<(55 + length)]), h, "credentialId misplaced")
            guard let key = data.credentialPublicKey else { Invariant.fail(h, "attestation accepted without a COSE key") }
            Invariant.check(key.x.count == 32 && key.y.count == 32, h, "COSE coordinates not 32 bytes")
            let cose = try? CBORDecoder().decodePrefix(bytes, from: 55 + length)
            guard let cose else { Invariant.fail(h, "the COSE key does not decode on its own") }
            Invariant.check(cose.value.mapValue != nil, h, "COSE key is not a map")
            end = cose.end
        } else {
            Invariant.check(data.aaguid == nil && data.credentialId == nil && data.credentialPublicKey == nil, h, "assertion with credential fields")
        }
        if let ext = data.extensionBytes {
            Invariant.check(Array(bytes[end...]) == ext, h, "extension bytes are not the rest of the data")
            guard let map = try? CBORDecoder().decode(ext), let entries = map.mapValue else { Invariant.fail(h, "extension is not one CBOR map") }
            Invariant.check(entries.allSatisfy { $0.key.textValue != nil }, h, "extension map with a non-text key")
            Invariant.check(data.signals != nil, h, "extension without signals")
        } else {
            Invariant.check(end == bytes.count, h, "\(bytes.count - end) unparsed trailing bytes accepted")
            Invariant.check(data.flags & 0x80 == 0, h, "ED flag set without extensions")
            Invariant.check(data.signals == nil, h, "signals without extension bytes")
        }
    }
}
