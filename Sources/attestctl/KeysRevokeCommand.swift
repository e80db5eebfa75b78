import Foundation
import GatewayRedis
import GatewayStore

/// `attestctl keys revoke`: one key (`--key-id`) or, in bulk, every active key of an app or an
/// environment (`--app` / `--environment`, optionally narrowed by `--created-after` /
/// `--created-before`), recording `--reason` and `--operator` (else `ATTESTCTL_OPERATOR`) with the
/// time in the key record (`RedisStore.revokeKey(_:reason:revokedBy:now:completion:)`).
///
/// Bulk: `--reason` is required, and either `--dry-run` (list what would be revoked, change nothing)
/// or `--yes` (revoke). One compact JSON line per key on standard output
/// (`{"keyId","appId","environment","createdAt","result":"would_revoke"|"revoked"|"already_revoked"}`),
/// a summary on standard error (`{"matched":N,"revoked":M,"dryRun":BOOL}`); exit 1 when no active
/// key matched. A store failure stops the walk after the page it hit, whose keys are all printed
/// (`"result":"failed"` with `"error"` for the keys it hit), then exits 3.
enum KeysRevokeCommand {
    static func run(_ arguments: [String]) throws {
        let options = try DeviceCommandOptions(arguments, valued: RedisLogin.options.union(KeyFilter.options).union(["key-id", "reason", "operator"])
                                                                .union(KeysAccountCommand.options),
                                               flags: ["yes", "dry-run"])
        let reason = try KeysCommand.auditText(try options.value("reason"), option: "reason")
        let revokedBy = try KeysCommand.auditText(try options.value("operator") ?? ProcessInfo.processInfo.environment["ATTESTCTL_OPERATOR"],
                                                  option: "operator")
        let filter = try KeyFilter(options)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        if let account = try KeysAccountCommand.account(options) {
            var others = filter
            others.app = nil  // --app names the account's app (required by KeysAccountCommand.account)
            guard others.isEmpty, try options.value("key-id") == nil else {
                throw DeviceCommandError.usage("--account revokes the keys of one account: no --key-id, --environment, --status or --created-* with it")
            }
            guard reason != nil else { throw DeviceCommandError.usage("a revocation by account needs --reason") }
            let dryRun = options.flag("dry-run")
            guard dryRun != options.flag("yes") else {
                throw DeviceCommandError.usage("a revocation by account needs --yes to revoke, or --dry-run to list what would be revoked (not both)")
            }
            return try KeysAccountCommand.revoke(account, reason: reason, revokedBy: revokedBy, dryRun: dryRun, now: now, options: options)
        }
        if let text = try options.value("key-id") {
            guard filter.isEmpty else { throw DeviceCommandError.usage("--key-id revokes one key: no --app, --environment, --status or --created-* with it") }
            let keyId = try KeysCommand.keyID(text)
            let store = try KeysCommand.connect(options)
            defer { store.close() }
            let outcome = try KeysCommand.wait { store.revokeKey(keyId, reason: reason, revokedBy: revokedBy, now: now, completion: $0) }
            guard outcome != .notFound else { throw KeysCommandError(.nothingMatched, "no key record for \(keyId)") }
            // Printed before the account index is touched: a failure there must not hide that the
            // key is revoked (exit 3 then says what is left to do).
            print(JSONText.object([("keyId", DeviceCommand.base64(keyId.bytes)), ("status", .string("revoked")),
                                   ("result", .string(outcome == .revoked ? "revoked" : "already_revoked"))]).pretty())
            do {
                try KeysCommand.leaveAccount(try KeysCommand.wait { store.fetchKey(keyId, completion: $0) }, store)
            } catch let error as KeysCommandError {
                throw KeysCommandError(error.exitCode, "the key is revoked, but not yet out of its account's index (run the command again): \(error)")
            }
            return
        }
        guard filter.app != nil || filter.environment != nil else {
            throw DeviceCommandError.usage("give --key-id for one key, or --app / --environment for a bulk revocation")
        }
        guard filter.status == nil else { throw DeviceCommandError.usage("bulk revocation selects active keys: no --status") }
        guard reason != nil else { throw DeviceCommandError.usage("a bulk revocation needs --reason") }
        let dryRun = options.flag("dry-run")
        guard dryRun != options.flag("yes") else {
            throw DeviceCommandError.usage("a bulk revocation needs --yes to revoke, or --dry-run to list what would be revoked (not both)")
        }
        let store = try KeysCommand.connect(options)
        defer { store.close() }
        var matched = 0
        var revoked = 0
        var failure: KeysCommandError?
        // A failure of the walk itself (SCAN, reading a record) ends it too: the summary is written
        // first, then the error (exit 3).
        do {
            _ = try KeysListCommand.walk(store, from: .start) { items in
                let chosen = items.map(\.record).filter { $0.status == .active && filter.matches($0) }
                matched += chosen.count
                let batch = KeysRevocationBatch(chosen, dryRun: dryRun, store: store, reason: reason, revokedBy: revokedBy, now: now) {
                    try KeysCommand.leaveAccount($0, store)
                }
                revoked += batch.revoked
                for (i, record) in chosen.enumerated() {
                    print(batch.line(i, [("keyId", DeviceCommand.base64(record.keyId.bytes)), ("appId", .string(record.appId)),
                                         ("environment", .string(record.environment.rawValue)), ("createdAt", .integer(record.createdAt))]))
                }
                // The page is printed: stop at its store failure (the next pages would fail the same way;
                // a re-run picks up the keys still active).
                if let error = batch.failure {
                    failure = error
                    return .some(nil)  // stop here (the walk's own cursor is not needed)
                }
                return nil
            }
        } catch let error as KeysCommandError {
            failure = failure ?? error
        }
        FileHandle.standardError.write(Data("{\"matched\":\(matched),\"revoked\":\(revoked),\"dryRun\":\(dryRun)}\n".utf8))
        if let failure { throw failure }
        if matched == 0 { throw KeysCommandError(.nothingMatched, "no active key matched") }
    }
}
