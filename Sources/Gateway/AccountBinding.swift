import AttestCrypto
import GatewayConfig
import GatewayHTTP
import GatewayStore

/// Keys per account for one app (issue 10, DESIGN.md section 8 "Keys per account"): which request
/// header names the account, how its value becomes the keyed hash the store keeps, and how many live
/// keys an account may have.
///
/// The hash is HMAC-SHA256(key = the app's account key, message = the App ID's bytes, one 0x00 byte,
/// then the header's value bytes as received, surrounding whitespace already removed by the HTTP
/// parser). The App ID makes an account a per-app one: two apps configured with the same account key
/// and header never share an account index, so one app's `max_keys_per_account` never revokes another
/// app's keys. The separator is unambiguous: an App ID is printable ASCII (never 0x00), so the App ID
/// ends at the first 0x00. `attestctl keys ... --account V --app ID` computes the same value with the
/// same key, so operators can find an account's keys without the store ever holding the account value.
public struct AccountBinding: Sendable {
    /// The request header naming the account (matched case-insensitively).
    public let header: String
    /// Most live keys per account.
    public let maximumKeys: Int
    /// The App ID the accounts belong to (the first part of every hashed message).
    public let appId: String
    private let key: [UInt8]

    /// A binding with an HMAC key (at least 16 bytes are expected; the configuration checks it) for the
    /// accounts of `appId` (`<team id>.<bundle id>`, printable ASCII).
    public init(header: String, hmacKey: [UInt8], maximumKeys: Int, appId: String) {
        self.header = header
        self.key = hmacKey
        self.maximumKeys = max(maximumKeys, 1)
        self.appId = appId
    }

    /// The binding configured for an app, or nil when it does not count keys per account.
    public init?(_ app: AppConfiguration) {
        guard let accounts = app.accountKeys else { return nil }
        self.init(header: accounts.header, hmacKey: accounts.hmacKey, maximumKeys: accounts.maximumKeys,
                  appId: app.appID.description)
    }

    /// HMAC-SHA256 of the App ID, 0x00 and `value` under the account key.
    public func hash<Bytes: Collection>(_ value: Bytes) -> AccountHash where Bytes.Element == UInt8 {
        var message = Array(appId.utf8)
        message.append(0x00)
        message.append(contentsOf: value)
        // HMAC-SHA256 always gives 32 bytes.
        return try! AccountHash(HMACSHA256.authenticationCode(key: key, message: message))
    }

    /// The account of a request: the hash of the header's value; `hash` nil when the header is absent
    /// (the key is then not counted for any account). `refusal` `400 account_invalid` when the header
    /// appears more than once or is empty.
    func account(of headers: HTTPHeaders) -> (hash: AccountHash?, refusal: Refusal?) {
        switch headers.count(of: header) {
        case 0: return (nil, nil)
        case 1:
            guard let value = headers.firstBytes(header), !value.isEmpty else { return (nil, Refusal.accountInvalid(header)) }
            return (hash(value), nil)
        default: return (nil, Refusal.accountInvalid(header))
        }
    }
}
