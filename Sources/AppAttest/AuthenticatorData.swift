/// App Attest authenticatorData (WebAuthn layout, Apple: "Validating apps that connect to your
/// server"): `rpIdHash(32) flags(1) counter(4, big-endian) [aaguid(16) credentialIdLength(2, BE)
/// credentialId COSE_Key] [extensions]`.
///
/// Parsing is by structure, strict:
/// - attestation: the AT flag (0x40) must be set and the attested credential data present;
/// - assertion: no credential block is read (assertions may carry the AT flag without one);
/// - after the fixed fields, either nothing or **exactly one** well-formed CBOR map that ends the
///   data (WebAuthn extensions when ED 0x80 is set; from iOS 27 Apple's signal map without ED).
///   Anything else - bytes after the map, a non-map, ED set with nothing - is refused.
/// The raw bytes are kept as received for hashing and signature checks.
public struct AuthenticatorData: Sendable {
    /// Which object the data comes from.
    public enum Kind: Sendable {
        /// From an attestation object (credential block required).
        case attestation
        /// From an assertion (no credential block).
        case assertion
    }

    /// The bytes exactly as received.
    public let rawBytes: [UInt8]
    /// SHA-256 of the App ID (32 bytes).
    public let rpIdHash: [UInt8]
    /// Flags byte (0x40 AT, 0x80 ED, 0x01 UP, 0x04 UV).
    public let flags: UInt8
    /// Signature counter (0 in attestations).
    public let counter: UInt32
    /// aaguid (16 bytes), attestation only.
    public let aaguid: [UInt8]?
    /// credentialId (the keyId for App Attest), attestation only.
    public let credentialId: [UInt8]?
    /// The credential public key, attestation only.
    public let credentialPublicKey: COSEKey?
    /// The raw trailing CBOR map, if any.
    public let extensionBytes: [UInt8]?
    /// Apple's signals read from the trailing map, if any.
    public let signals: AuthenticatorSignals?

    /// Attested credential data included (AT).
    public static let flagAttestedCredentialData: UInt8 = 0x40
    /// Extension data included (ED).
    public static let flagExtensionData: UInt8 = 0x80

    /// Parses `bytes` as `kind`.
    /// - Throws: `AuthenticatorDataError` (reason `auth_data_malformed`).
    public init(_ bytes: [UInt8], kind: Kind) throws {
        guard bytes.count >= 37 else { throw AuthenticatorDataError("\(bytes.count) bytes, at least 37 needed") }
        rawBytes = bytes
        rpIdHash = Array(bytes[0..<32])
        flags = bytes[32]
        counter = UInt32(bytes[33]) << 24 | UInt32(bytes[34]) << 16 | UInt32(bytes[35]) << 8 | UInt32(bytes[36])
        var index = 37
        let decoder = CBORDecoder(limits: .init(maxDepth: 4, maxItems: 64, maxInputLength: 64 * 1024))
        if kind == .attestation {
            guard flags & Self.flagAttestedCredentialData != 0 else { throw AuthenticatorDataError("AT flag not set in an attestation") }
            guard bytes.count >= 55 else { throw AuthenticatorDataError("attested credential data truncated") }
            aaguid = Array(bytes[37..<53])
            let length = Int(bytes[53]) << 8 | Int(bytes[54])
            guard length > 0, bytes.count - 55 >= length else { throw AuthenticatorDataError("credentialId length \(length) out of range") }
            credentialId = Array(bytes[55..<(55 + length)])
            index = 55 + length
            guard index < bytes.count else { throw AuthenticatorDataError("COSE key missing") }
            let key: CBORValue
            do {
                (key, index) = try decoder.decodePrefix(bytes, from: index)
            } catch {
                throw AuthenticatorDataError("COSE key: \(error)")
            }
            credentialPublicKey = try COSEKey(key)
        } else {
            aaguid = nil
            credentialId = nil
            credentialPublicKey = nil
        }
        if index == bytes.count {
            guard flags & Self.flagExtensionData == 0 else { throw AuthenticatorDataError("ED flag set but no extensions") }
            extensionBytes = nil
            signals = nil
            return
        }
        let map: CBORValue
        let end: Int
        do {
            (map, end) = try decoder.decodePrefix(bytes, from: index)
        } catch {
            throw AuthenticatorDataError("trailing data is not one well-formed CBOR map: \(error)")
        }
        guard end == bytes.count else { throw AuthenticatorDataError("\(bytes.count - end) bytes after the extension map") }
        signals = try AuthenticatorSignals(map: map)
        extensionBytes = Array(bytes[index..<end])
    }
}
