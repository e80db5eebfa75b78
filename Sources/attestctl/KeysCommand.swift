import AppAttest
import Dispatch
import Foundation
import GatewayRedis
import GatewayStore

/// `attestctl keys show|revoke|delete --store URL --key-id B64`: operator actions on attested key records in
/// the gateway's Redis store (DESIGN.md section 4).
///
/// - `show`: the record as JSON (keyId, appId, environment, counter, status, trustTier, createdAt,
///   expiresAt, receiptRiskMetric, receiptExpiresAt, receiptBytes; times in unix ms); exit 1 when absent.
/// - `revoke`: marks the key `revoked`; its assertions are then answered `403 key_revoked` on every
///   gateway sharing the store (caches hold only the public key, never the status). Exit 1 when absent.
/// - `delete`: removes the record; the device must attest a new key (`401 key_unknown`, `reattest`).
/// `--store` takes the Redis URLs the configuration's `store:` takes (`GatewayRules.RedisURL`; a relative
/// `unix:` path resolves against the current directory). The keyId is standard or URL-safe base64 of
/// its 32 bytes. A store outage exits 1 with the reason.
enum KeysCommand {
    static let usage = "attestctl keys show|revoke|delete --store redis://HOST:PORT/DB|unix:/PATH/redis.sock --key-id B64"

    static func run(_ arguments: [String]) -> Int32 {
        guard let action = arguments.first, ["show", "revoke", "delete"].contains(action) else {
            FileHandle.standardError.write(Data("usage: \(usage)\n".utf8))
            return 2
        }
        return DeviceCommand.run("keys \(action)", usage: usage) {
            let options = try DeviceCommandOptions(Array(arguments.dropFirst()), valued: ["store", "key-id"])
            let url = try options.required("store")
            let keyBytes = try DeviceCommand.decodeBase64(try options.required("key-id"), option: "key-id")
            guard let keyId = try? KeyID(keyBytes) else { throw DeviceCommandError.usage("--key-id must be base64 of 32 bytes") }
            let store: any AttestStore
            do {
                store = try AttestStores.make(url: url, baseDirectory: FileManager.default.currentDirectoryPath)
            } catch {
                throw DeviceCommandError.usage("--store: \(error)")
            }
            defer { store.close() }
            switch action {
            case "show":
                guard let record = try wait({ store.fetchKey(keyId, completion: $0) }).get() else {
                    throw KeysCommandError("no key record for \(keyId)")
                }
                return describe(record)
            case "revoke":
                guard try wait({ store.revokeKey(keyId, completion: $0) }).get() else {
                    throw KeysCommandError("no key record for \(keyId)")
                }
                return .object([("keyId", DeviceCommand.base64(keyId.bytes)), ("status", .string("revoked"))])
            default:
                let existed = try wait({ store.deleteKey(keyId, completion: $0) }).get()
                return .object([("keyId", DeviceCommand.base64(keyId.bytes)), ("deleted", .bool(existed))])
            }
        }
    }

    static func describe(_ record: KeyRecord) -> JSONText {
        func optional(_ value: Int64?) -> JSONText { value.map { .integer($0) } ?? .null }
        return .object([
            ("keyId", DeviceCommand.base64(record.keyId.bytes)),
            ("appId", .string(record.appId)),
            ("environment", .string(record.environment.rawValue)),
            ("counter", .integer(Int64(record.counter))),
            ("status", .string(record.status.rawValue)),
            ("trustTier", .string(record.trustTier.rawValue)),
            ("createdAt", .integer(record.createdAt)),
            ("expiresAt", optional(record.expiresAt)),
            ("receiptRiskMetric", optional(record.receiptRiskMetric.map(Int64.init))),
            ("receiptExpiresAt", optional(record.receiptExpiresAt)),
            ("receiptBytes", .integer(Int64(record.receipt?.count ?? 0))),
        ])
    }

    /// Runs one asynchronous store call to completion (a command-line tool may block).
    private static func wait<T: Sendable>(_ call: (@escaping @Sendable (T) -> Void) -> Void) throws -> T {
        let box = KeysCommandBox<T>()
        let done = DispatchSemaphore(value: 0)
        call { box.value = $0; done.signal() }
        guard done.wait(timeout: .now() + 10) == .success, let value = box.value else {
            throw KeysCommandError("the store did not answer within 10 s")
        }
        return value
    }
}

/// One result handed from a store callback to the waiting command.
final class KeysCommandBox<T>: @unchecked Sendable {  // written once, before the semaphore is signalled
    var value: T?
}

/// A `keys` failure (exit 1).
struct KeysCommandError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
