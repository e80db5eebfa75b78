/// The keyed hash that stands for an account in the store: HMAC-SHA256 of the account header's value
/// under the app's account key (32 bytes). The account value itself is never stored; without the key
/// the hash cannot be linked back to it (issue 10, "Keys per account").
///
/// The gateway computes it (`Gateway.AccountBinding`); `attestctl keys ... --account` computes the same
/// with the same key. The unpadded base64url form is used in Redis key names (`<p>:{acct:<hash>}:keys`).
public struct AccountHash: Hashable, Sendable, CustomStringConvertible {
    /// Length in bytes (SHA-256 digest size).
    public static let byteCount = 32

    /// The 32 raw bytes.
    public let bytes: [UInt8]
    /// Unpadded base64url (RFC 4648 section 5) of `bytes`, as ASCII bytes (43 bytes).
    public let base64URL: [UInt8]

    /// Wraps the 32 bytes of an HMAC-SHA256.
    /// - Throws: `StoreInputError.accountHashLength` unless exactly 32 bytes.
    public init<Bytes: Collection>(_ bytes: Bytes) throws where Bytes.Element == UInt8 {
        guard bytes.count == AccountHash.byteCount else { throw StoreInputError.accountHashLength(bytes.count) }
        self.bytes = Array(bytes)
        self.base64URL = Base64URL.encode(self.bytes)
    }

    /// Byte-wise equality.
    public static func == (lhs: AccountHash, rhs: AccountHash) -> Bool { lhs.bytes == rhs.bytes }
    /// Hashes the raw bytes.
    public func hash(into hasher: inout Hasher) { hasher.combine(contentsOf: bytes) }

    /// Unpadded base64url text (for logs and `attestctl`).
    public var description: String { String(decoding: base64URL, as: UTF8.self) }
}
