import Foundation
import Gateway
import GatewayRedis
import GatewayRules
import GatewayStore

/// `attestctl keys list --account V` and `attestctl keys revoke --account V` (issue 10, "Keys per
/// account"): the keys of one account, found through the account index of the store
/// (`<p>:{acct:<hash>}:keys`). The account value is hashed here exactly as the gateway does
/// (HMAC-SHA256 under the app's account key over the App ID, 0x00 and the value,
/// `Gateway.AccountBinding`), so the store never sees it. Accounts are per app: `--app ID` (the App ID
/// of the app whose accounts these are) is required with `--account`.
///
/// The account key comes from `--account-key-file FILE` or the environment variable
/// `ATTESTCTL_ACCOUNT_KEY` (never from the command line: it is a secret); the same bytes as the app's
/// `account_key` / `account_key_file` (one trailing newline stripped).
///
/// - `list --account V --app ID [--status S] ...`: one compact JSON line per key of the account, oldest first
///   (`KeysCommand.describe`); exit 1 when the account has none.
/// - `revoke --account V --app ID --reason R [--operator O] (--yes|--dry-run)`: revokes every active key of the
///   account with the audit fields, then removes it from the index; one JSON line per key
///   (`"result": "would_revoke"|"revoked"|"already_revoked"|"not_found"|"failed"`, a failed one
///   with `"error"`), the summary on standard error; exit 1 when no active key matched, 3 (after
///   printing every key) when the store failed (`KeysRevocationBatch`).
enum KeysAccountCommand {
    /// The options this command adds to `list` and `revoke`.
    static let options: Set<String> = ["account", "account-key-file"]

    /// The account hash of `--account` of the app `--app` under the account key; nil when `--account`
    /// is absent. - Throws: `DeviceCommandError.usage` without `--app` or the account key.
    static func account(_ options: DeviceCommandOptions,
                        environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AccountHash? {
        guard let value = try options.value("account") else {
            if try options.value("account-key-file") != nil { throw DeviceCommandError.usage("--account-key-file goes with --account") }
            return nil
        }
        guard !value.isEmpty else { throw DeviceCommandError.usage("--account must not be empty") }
        guard let appId = try options.value("app"), !appId.isEmpty else {
            throw DeviceCommandError.usage("--account needs --app ID: an account belongs to one app (its App ID is part of the account hash)")
        }
        var key: [UInt8]
        if let file = try options.value("account-key-file") {
            switch PasswordFile.read(file) {
            case .success(let text): key = Array(text.utf8)
            case .failure(let problem): throw DeviceCommandError.usage("--account-key-file: \(problem.message)")
            }
        } else if let text = environment["ATTESTCTL_ACCOUNT_KEY"] {
            key = Array(text.utf8)
        } else {
            throw DeviceCommandError.usage("--account needs the app's account key: --account-key-file FILE or ATTESTCTL_ACCOUNT_KEY")
        }
        guard !key.isEmpty else { throw DeviceCommandError.usage("the account key is empty") }
        defer { key = [] }
        return AccountBinding(header: "", hmacKey: key, maximumKeys: 1, appId: appId).hash(Array(value.utf8))
    }

    /// `keys list --account`.
    static func list(_ account: AccountHash, filter: KeyFilter, options: DeviceCommandOptions) throws {
        let store = try KeysCommand.connect(options)
        defer { store.close() }
        let records = try records(of: account, store)
        let chosen = records.filter { filter.matches($0) }
        let revocations = try KeysCommand.waitAll(chosen) { record, done in store.fetchRevocation(record.keyId, completion: done) }
        for (record, revocation) in zip(chosen, revocations) {
            print(KeysCommand.describe(record, revocation).rendered)
        }
        if chosen.isEmpty { throw KeysCommandError(.nothingMatched, "no key of this account matched") }
    }

    /// `keys revoke --account`.
    static func revoke(_ account: AccountHash, reason: String?, revokedBy: String?, dryRun: Bool, now: Int64,
                       options: DeviceCommandOptions) throws {
        let store = try KeysCommand.connect(options)
        defer { store.close() }
        let chosen = try records(of: account, store).filter { $0.status == .active }
        let batch = KeysRevocationBatch(chosen, dryRun: dryRun, store: store, reason: reason, revokedBy: revokedBy, now: now) { answered in
            _ = try KeysCommand.waitAll(answered) { record, done in store.removeAccountKey(account, keyId: record.keyId, completion: done) }
        }
        for (i, record) in chosen.enumerated() {
            print(batch.line(i, [("keyId", DeviceCommand.base64(record.keyId.bytes)), ("appId", .string(record.appId)),
                                 ("createdAt", .integer(record.createdAt))]))
        }
        FileHandle.standardError.write(Data("{\"matched\":\(chosen.count),\"revoked\":\(batch.revoked),\"dryRun\":\(dryRun)}\n".utf8))
        if let failure = batch.failure { throw failure }
        if chosen.isEmpty { throw KeysCommandError(.nothingMatched, "no active key of this account") }
    }

    /// The records of the keys in the account's index, oldest first (keys deleted meanwhile skipped).
    private static func records(of account: AccountHash, _ store: RedisStore) throws -> [KeyRecord] {
        let keyIds = try KeysCommand.wait { store.accountKeys(account, completion: $0) }
        return try KeysCommand.waitAll(keyIds) { keyId, done in store.fetchKey(keyId, completion: done) }.compactMap { $0 }
    }
}
