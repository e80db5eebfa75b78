/// Keys per account for one app (`apps[].account_header`, `account_key` or `account_key_file`,
/// `max_keys_per_account`; issue 10 "Keys per account"): the request header naming the account on
/// registration and attestation, the secret of the keyed hash that stands for the account in the
/// store (HMAC-SHA256; the value itself is never stored), and how many live keys an account may have.
public struct AccountKeysConfiguration: Sendable, Hashable, CustomStringConvertible {
    /// Fewest bytes accepted for the HMAC key.
    public static let minimumKeyBytes = 16
    /// Default of `max_keys_per_account`.
    public static let defaultMaximumKeys = 5

    /// The request header whose value identifies the account (an RFC 9110 token, e.g. `X-Account-Id`).
    public var header: String
    /// The HMAC-SHA256 key (at least 16 bytes; the file's content or the expanded `${ENV}` value,
    /// one trailing newline stripped). Secret: never printed.
    public var hmacKey: [UInt8]
    /// Most live keys per account (1...1000); registering one more revokes the oldest.
    public var maximumKeys: Int

    /// Creates the setting.
    public init(header: String, hmacKey: [UInt8], maximumKeys: Int = AccountKeysConfiguration.defaultMaximumKeys) {
        self.header = header
        self.hmacKey = hmacKey
        self.maximumKeys = maximumKeys
    }

    /// The header and the limit; never the key.
    public var description: String { "account header \(header), at most \(maximumKeys) keys, key <redacted>" }
}
