import AppAttest
import Dispatch
import Foundation
import GatewayRedis
import GatewayRules
import GatewayStore

/// `attestctl keys list|show|revoke|delete`: operator actions on the attested key records in the
/// gateway's Redis store (DESIGN.md section 4; issue 9 "attestctl for operators").
///
/// - `list [FILTERS] [--limit N] [--cursor C]`: one compact JSON object per line per record, in SCAN
///   order; when more may follow, the last line on standard error is `{"next_cursor":"C"}`
///   (`KeysListCommand`).
/// - `show --key-id B64`: the record as indented JSON (`describe`).
/// - `revoke --key-id B64 [--reason R] [--operator O]`: marks the key `revoked` with `revoked_at`,
///   `revoked_reason`, `revoked_by` in its record; its assertions are then answered `403 key_revoked`
///   on every gateway sharing the store. A key already revoked keeps its first revocation
///   (`"result":"already_revoked"`, exit 0).
/// - `revoke --app ID|--environment E [--created-after T] [--created-before T] --reason R
///   [--operator O] (--yes|--dry-run)`: bulk revocation of the matching active keys, one JSON line
///   per key (`KeysRevokeCommand`).
/// - `list --account V --app ID` / `revoke --account V --app ID ...`: the keys of one account of one app
///   (`KeysAccountCommand`).
/// - `delete --key-id B64`: removes the record; the device must attest a new key.
///
/// Redis login: `RedisLogin` (never a password on argv). The operator defaults to
/// `ATTESTCTL_OPERATOR` when `--operator` is absent.
///
/// Exit codes (`ExitCode`): 0 done; 1 no such key / nothing matched; 2 usage (bad option, password on
/// the command line, bulk revocation without `--yes` or `--dry-run`); 3 store unavailable (Redis
/// unreachable, refused login, timeout).
enum KeysCommand {
    /// The exit statuses of `attestctl keys`.
    enum ExitCode: Int32 {
        case ok = 0
        case nothingMatched = 1
        case usage = 2
        case storeUnavailable = 3
    }

    static let usage = """
        attestctl keys list [--app ID] [--environment development|production] [--status active|revoked] [--risk-state fresh|stale|stopped|unknown]
                            [--created-after T] [--created-before T] [--limit N] [--cursor C] STORE
               attestctl keys list --account VALUE --app ID [--account-key-file F] [--status active|revoked] STORE
               attestctl keys show|delete --key-id B64 STORE
               attestctl keys revoke --key-id B64 [--reason TEXT] [--operator NAME] STORE
               attestctl keys revoke (--app ID|--environment E) [--created-after T] [--created-before T]
                                     --reason TEXT [--operator NAME] (--yes|--dry-run) STORE
               attestctl keys revoke --account VALUE --app ID [--account-key-file F] --reason TEXT [--operator NAME]
                                     (--yes|--dry-run) STORE
               account key: --account-key-file F or ATTESTCTL_ACCOUNT_KEY (the app's account_key)
               STORE: \(RedisLogin.help)
               T: unix milliseconds or RFC 3339 (2026-05-01T00:00:00Z)
               exit: 0 ok, 1 not found / nothing matched, 2 usage, 3 store unavailable
        """

    static func run(_ arguments: [String]) -> Int32 {
        if let first = arguments.first, ["-h", "--help", "help"].contains(first) {
            print("usage: \(usage)")
            return ExitCode.ok.rawValue
        }
        guard let action = arguments.first, ["list", "show", "revoke", "delete"].contains(action) else {
            FileHandle.standardError.write(Data("usage: \(usage)\n".utf8))
            return ExitCode.usage.rawValue
        }
        let rest = Array(arguments.dropFirst())
        do {
            switch action {
            case "list": try KeysListCommand.run(rest)
            case "revoke": try KeysRevokeCommand.run(rest)
            default: try single(action, rest)
            }
            return ExitCode.ok.rawValue
        } catch let error as KeysCommandError {
            FileHandle.standardError.write(Data("attestctl keys \(action): \(error.description)\n".utf8))
            return error.exitCode.rawValue
        } catch DeviceCommandError.usage(let message) {
            FileHandle.standardError.write(Data("attestctl keys \(action): \(message)\nusage: \(usage)\n".utf8))
            return ExitCode.usage.rawValue
        } catch {
            FileHandle.standardError.write(Data("attestctl keys \(action): \(error)\n".utf8))
            return ExitCode.nothingMatched.rawValue
        }
    }

    /// `show` and `delete`.
    private static func single(_ action: String, _ arguments: [String]) throws {
        let options = try DeviceCommandOptions(arguments, valued: RedisLogin.options.union(["key-id"]))
        let keyId = try keyID(try options.required("key-id"))
        let store = try connect(options)
        defer { store.close() }
        switch action {
        case "show":
            guard let record = try wait({ store.fetchKey(keyId, completion: $0) }) else {
                throw KeysCommandError(.nothingMatched, "no key record for \(keyId)")
            }
            let revocation = try wait({ store.fetchRevocation(keyId, completion: $0) })
            print(describe(record, revocation).pretty())
        default:
            let record = try wait({ store.fetchKey(keyId, completion: $0) })
            let existed = try wait({ store.deleteKey(keyId, completion: $0) })
            // Printed first: a failure in the account index must not hide the deletion.
            print(JSONText.object([("keyId", DeviceCommand.base64(keyId.bytes)), ("deleted", .bool(existed))]).pretty())
            if !existed { throw KeysCommandError(.nothingMatched, "no key record for \(keyId)") }
            do {
                try leaveAccount(record, store)
            } catch let error as KeysCommandError {
                throw KeysCommandError(error.exitCode, "the key is deleted, but not yet out of its account's index: \(error)")
            }
        }
    }

    // MARK: Shared

    /// Takes revoked or deleted keys out of their account's index (`removeAccountKey`), so that they
    /// no longer count towards `max_keys_per_account`: the next registration of the account must not
    /// revoke a live key for a slot a dead one holds (README "Keys per account").
    static func leaveAccount(_ records: [KeyRecord?], _ store: RedisStore) throws {
        let indexed = records.compactMap { $0 }.filter { $0.accountHash != nil }
        _ = try waitAll(indexed) { record, done in store.removeAccountKey(record.accountHash!, keyId: record.keyId, completion: done) }
    }

    /// `leaveAccount` for one record.
    static func leaveAccount(_ record: KeyRecord?, _ store: RedisStore) throws { try leaveAccount([record], store) }

    /// The keyId of a `--key-id` value (standard or URL-safe base64 of 32 bytes).
    static func keyID(_ text: String) throws -> KeyID {
        let bytes = try DeviceCommand.decodeBase64(text, option: "key-id")
        guard let keyId = try? KeyID(bytes) else { throw DeviceCommandError.usage("--key-id must be base64 of 32 bytes") }
        return keyId
    }

    /// A Redis store for the command (`RedisLogin`; connects in the background).
    static func connect(_ options: DeviceCommandOptions) throws -> RedisStore {
        var configuration = RedisStore.Configuration(url: try RedisLogin.url(options))
        configuration.tlsContext = try RedisLogin.tlsContext(options, url: configuration.url)
        configuration.commandTimeout = 5_000
        configuration.connectTimeout = 3_000
        // As the gateway's `store.wait_replicas`: a revocation is reported done only once N replicas
        // have it, so a failover right after cannot bring the key back.
        configuration.waitReplicas = try options.integer("wait-replicas", default: 0, in: 0...16) ?? 0
        let store: RedisStore
        do {
            store = try RedisStore(configuration: configuration)
        } catch {
            throw DeviceCommandError.usage("--store: \(error)")
        }
        // A `redis://` URL naming a Redis Cluster node reaches that node's keys only: a bulk
        // revocation would report success for a third of the keys. Refused. An unreachable store
        // fails here (exit 3, once); a refused INFO (an ACL user without it) cannot tell, and goes on.
        let isClusterNode = KeysCommandBox<Result<Bool, StoreUnavailable>>()
        let checked = DispatchSemaphore(value: 0)
        store.isClusterNode { isClusterNode.value = $0; checked.signal() }
        _ = checked.wait(timeout: .now() + 15)
        switch isClusterNode.value {
        case .failure(let error)?:
            if case .errorReply = error.reason { break }
            store.close()
            throw KeysCommandError(.storeUnavailable, "\(error)")
        case nil:
            store.close()
            throw KeysCommandError(.storeUnavailable, "store_unavailable: the store did not answer within 15 s")
        case .success(false)?:
            break
        case .success(true)?:
            store.close()
            throw DeviceCommandError.usage("--store \(configuration.url): this server is a Redis Cluster node; use redis+cluster://HOST:PORT[,HOST:PORT...] (a redis:// URL reaches one node's keys only)")
        }
        return store
    }

    /// The record (and its revocation audit fields) as JSON: keyId, appId, environment, counter,
    /// status, trustTier, platformAttested, backing (device keys; null for App Attest keys), integrity,
    /// createdAt, expiresAt, receiptRiskMetric, receiptExpiresAt, receiptBytes,
    /// revokedAt, revokedReason, revokedBy, accountHash, riskMetric, riskObservedAt, riskState (`fresh`,
    /// `stale`, `stopped`), receipt (the stored receipt decoded as `attestctl inspect` does: type, appId,
    /// environment, creationTime, riskMetric, notBefore, expirationTime...) (times in unix ms; null
    /// when absent).
    static func describe(_ record: KeyRecord, _ revocation: KeyRevocation?) -> JSONText {
        func optional(_ value: Int64?) -> JSONText { value.map { .integer($0) } ?? .null }
        func optional(_ value: String?) -> JSONText { value.map { .string($0) } ?? .null }
        return .object([
            ("keyId", DeviceCommand.base64(record.keyId.bytes)),
            ("appId", .string(record.appId)),
            ("environment", .string(record.environment.rawValue)),
            ("counter", .integer(Int64(record.counter))),
            ("status", .string(record.status.rawValue)),
            ("trustTier", .string(record.trustTier.rawValue)),
            ("platformAttested", .bool(record.platformAttested)),
            ("backing", optional(record.backing?.rawValue)),
            ("integrity", .array(record.integrity.map { .string($0) })),
            ("createdAt", .integer(record.createdAt)),
            ("expiresAt", optional(record.expiresAt)),
            ("receiptRiskMetric", optional(record.receiptRiskMetric.map(Int64.init))),
            ("receiptExpiresAt", optional(record.receiptExpiresAt)),
            ("receiptBytes", .integer(Int64(record.receipt?.count ?? 0))),
            ("revokedAt", optional(revocation?.at)),
            ("revokedReason", optional(revocation?.reason)),
            ("revokedBy", optional(revocation?.revokedBy)),
            ("accountHash", optional(record.accountHash?.description)),
            // Fraud-metric receipts (issue 12): the stored receipt's fields, the metric's time and state.
            ("riskMetric", optional(record.receiptRiskMetric.map(Int64.init))),
            ("riskObservedAt", optional(record.riskObservedAt)),
            ("riskState", optional(record.riskState?.rawValue)),
            ("receipt", record.receipt.map(InspectCommand.receipt) ?? .null),
        ])
    }

    /// Runs one asynchronous store call to completion (a command-line tool may block); a store
    /// failure or no answer within 15 s is `storeUnavailable` (exit 3).
    static func wait<T: Sendable>(_ call: (@escaping @Sendable (Result<T, StoreUnavailable>) -> Void) -> Void) throws -> T {
        let box = KeysCommandBox<Result<T, StoreUnavailable>>()
        let done = DispatchSemaphore(value: 0)
        call { box.value = $0; done.signal() }
        guard done.wait(timeout: .now() + 15) == .success, let value = box.value else {
            throw KeysCommandError(.storeUnavailable, "store_unavailable: the store did not answer within 15 s")
        }
        switch value {
        case .success(let result): return result
        case .failure(let error): throw KeysCommandError(.storeUnavailable, "\(error)")  // "store_unavailable(reason): detail"
        }
    }

    /// Runs `call` for every item concurrently (pipelined on the store's connection) and returns the
    /// results in order.
    /// - Throws: `KeysCommandError(.storeUnavailable)` for the first item that failed or was not
    ///   answered within 30 s.
    static func waitAll<Item, T: Sendable>(_ items: [Item],
                                           _ call: (Item, @escaping @Sendable (Result<T, StoreUnavailable>) -> Void) -> Void) throws -> [T] {
        try waitEach(items, call).map { try $0.get() }
    }

    /// `waitAll`, keeping each item's own outcome: a store failure on one item does not hide what the
    /// others did (a bulk revocation prints every key it revoked before it reports the failure).
    /// Items not answered within 30 s fail with `store_unavailable`.
    static func waitEach<Item, T: Sendable>(_ items: [Item],
                                            _ call: (Item, @escaping @Sendable (Result<T, StoreUnavailable>) -> Void) -> Void)
        -> [Result<T, KeysCommandError>] {
        let boxes = items.map { _ in KeysCommandBox<Result<T, StoreUnavailable>>() }
        let group = DispatchGroup()
        for (item, box) in zip(items, boxes) {
            group.enter()
            call(item) { box.value = $0; group.leave() }
        }
        let answered = group.wait(timeout: .now() + 30) == .success
        return boxes.map { box in
            // Read under the group's guarantee when it completed; after a timeout a late answer may
            // still be written, so only an answered group's values are read.
            guard answered else {
                return .failure(KeysCommandError(.storeUnavailable, "store_unavailable: the store did not answer within 30 s"))
            }
            switch box.value {
            case .success(let result)?: return .success(result)
            case .failure(let error)?: return .failure(KeysCommandError(.storeUnavailable, "\(error)"))
            case nil: return .failure(KeysCommandError(.storeUnavailable, "store_unavailable: no answer"))
            }
        }
    }

    /// `--operator`, else `ATTESTCTL_OPERATOR`, else nil; at most 256 bytes without control characters.
    static func auditText(_ value: String?, option: String) throws -> String? {
        guard let value, !value.isEmpty else { return nil }
        guard value.utf8.count <= 256, !value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw DeviceCommandError.usage("--\(option) must be at most 256 bytes without control characters")
        }
        return value
    }
}

/// One result handed from a store callback to the waiting command.
final class KeysCommandBox<T>: @unchecked Sendable {  // written once, before the semaphore or group is signalled
    var value: T?
}

/// A `keys` failure with its exit status.
struct KeysCommandError: Error, CustomStringConvertible {
    let exitCode: KeysCommand.ExitCode
    let description: String
    init(_ exitCode: KeysCommand.ExitCode, _ description: String) {
        self.exitCode = exitCode
        self.description = description
    }
}
