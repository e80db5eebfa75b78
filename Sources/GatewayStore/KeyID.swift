/// The App Attest key identifier: the 32 raw bytes of SHA-256 of the key's 65-byte uncompressed public
/// point (Apple: "Validating apps that connect to your server", attestation step 5), as decoded from
/// the client's base64 - never the base64 text itself.
///
/// The canonical record key of every store is derived from these bytes (DESIGN.md section 1,
/// "Binary encoding"). The unpadded base64url form used in Redis key names is computed once here.
public struct KeyID: Hashable, Sendable, CustomStringConvertible {
    /// Length of a keyId in bytes (SHA-256 digest size).
    public static let byteCount = 32

    /// The 32 raw bytes.
    public let bytes: [UInt8]
    /// Unpadded base64url (RFC 4648 section 5) of `bytes`, as ASCII bytes (43 bytes).
    public let base64URL: [UInt8]

    /// Wraps decoded keyId bytes.
    /// - Throws: `StoreInputError.keyIdLength` unless exactly 32 bytes.
    public init<Bytes: Collection>(_ bytes: Bytes) throws where Bytes.Element == UInt8 {
        guard bytes.count == KeyID.byteCount else { throw StoreInputError.keyIdLength(bytes.count) }
        self.bytes = Array(bytes)
        self.base64URL = Base64URL.encode(self.bytes)
    }

    /// Byte-wise equality of the decoded values (not constant-time: these are identifiers, not secrets).
    public static func == (lhs: KeyID, rhs: KeyID) -> Bool { lhs.bytes == rhs.bytes }
    /// Hashes the raw bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(contentsOf: bytes) }

    /// Unpadded base64url text (for logs and diagnostics only; not used on hot paths).
    public var description: String { String(decoding: base64URL, as: UTF8.self) }
}
