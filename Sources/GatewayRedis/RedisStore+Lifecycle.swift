import GatewayStore

/// `KeyLifecycleStore` on Redis: each operation one Lua script (`RedisScript+Lifecycle`) touching one
/// Redis Cluster slot: the key's (`{<keyId>}`) for renew and forget, the account's (`{acct:<hash>}`)
/// for the account index.
extension RedisStore: KeyLifecycleStore {
    /// See `KeyLifecycleStore.renewKey` (one Lua script).
    public func renewKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, expiresAt: UnixMillis?, now: UnixMillis,
                         completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 64)
        args.append(decimal: now)
        if let counter { args.append(decimal: Int64(counter)) } else { args.append("") }
        if let expiresAt { args.append(decimal: expiresAt) } else { args.append("") }
        let keys = [schema.keyRecordName(keyId), schema.challengeName(keyId, challenge)]
        runScriptRouted(.renew, keys: keys, args: args) { [self] result, connection in
            acknowledged(result.flatMap(RedisStore.decodeLifecycle), on: connection, completion: completion)
        }
    }

    /// See `KeyLifecycleStore.forgetKey` (one Lua script).
    public func forgetKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, now: UnixMillis,
                          completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 48)
        args.append(decimal: now)
        if let counter { args.append(decimal: Int64(counter)) } else { args.append("") }
        let keys = [schema.keyRecordName(keyId), schema.challengeName(keyId, challenge)]
        runScriptRouted(.forget, keys: keys, args: args) { [self] result, connection in
            acknowledged(result.flatMap(RedisStore.decodeLifecycle), on: connection, completion: completion)
        }
    }

    /// See `KeyLifecycleStore.indexAccountKey` (one Lua script in the account's slot).
    public func indexAccountKey(_ account: AccountHash, keyId: KeyID, createdAt: UnixMillis, expiresAt: UnixMillis?,
                                limit: Int, now: UnixMillis,
                                completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 128)
        args.append(keyId.bytes)
        args.append(decimal: createdAt)
        if let expiresAt { args.append(decimal: expiresAt) } else { args.append("") }
        args.append(decimal: Int64(max(limit, 0)))
        args.append(decimal: now)
        runScript(.accountIndex, keys: accountKeys(account), args: args) { result in
            completion(result.flatMap(RedisStore.decodeKeyIds))
        }
    }

    /// See `KeyLifecycleStore.updateAccountKeyExpiry` (one Lua script in the account's slot).
    public func updateAccountKeyExpiry(_ account: AccountHash, keyId: KeyID, expiresAt: UnixMillis?,
                                       completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 64)
        args.append(keyId.bytes)
        if let expiresAt { args.append(decimal: expiresAt) } else { args.append("") }
        runScript(.accountExpiry, keys: accountKeys(account), args: args) { result in
            completion(result.flatMap { reply in
                if case .integer = reply { return .success(()) }
                return .failure(RedisStore.unexpected(reply))
            })
        }
    }

    /// See `KeyLifecycleStore.removeAccountKey` (one Lua script in the account's slot).
    public func removeAccountKey(_ account: AccountHash, keyId: KeyID,
                                 completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 48)
        args.append(keyId.bytes)
        runScript(.accountRemove, keys: accountKeys(account), args: args) { result in
            completion(result.flatMap { reply in
                switch reply {
                case .integer(0): return .success(false)
                case .integer(1): return .success(true)
                default: return .failure(RedisStore.unexpected(reply))
                }
            })
        }
    }

    /// See `KeyLifecycleStore.accountKeys` (`ZRANGE <index> 0 -1`).
    public func accountKeys(_ account: AccountHash, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 96)
        command.append("ZRANGE")
        let index = schema.accountName(account, "keys")
        command.append(index)
        command.append("0")
        command.append("-1")
        send(command, key: index) { result in completion(RedisStore.failErrorReplies(result).flatMap(RedisStore.decodeKeyIds)) }
    }

    // MARK: Internals

    private func accountKeys(_ account: AccountHash) -> [[UInt8]] {
        [schema.accountName(account, "keys"), schema.accountName(account, "exp")]
    }

    private static func decodeLifecycle(_ reply: RedisReply) -> Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable> {
        guard case .array(let items) = reply, let first = items.first, case .bulk(let code) = first else {
            return .failure(unexpected(reply))
        }
        guard first.isText("ok") else {
            guard items.count == 1, let refusal = StoreRefusal(rawValue: String(decoding: code, as: UTF8.self)) else {
                return .failure(unexpected(reply))
            }
            return .success(.refused(refusal))
        }
        guard items.count == 2, case .bulk(let accountBytes) = items[1] else { return .failure(unexpected(reply)) }
        if accountBytes.isEmpty { return .success(.accepted(KeyLifecycleChange(accountHash: nil))) }
        guard let account = try? AccountHash(accountBytes) else {
            return .failure(StoreUnavailable(.protocolError, detail: "corrupt account hash in key record"))
        }
        return .success(.accepted(KeyLifecycleChange(accountHash: account)))
    }

    private static func decodeKeyIds(_ reply: RedisReply) -> Result<[KeyID], StoreUnavailable> {
        guard case .array(let items) = reply else { return .failure(unexpected(reply)) }
        var keyIds: [KeyID] = []
        keyIds.reserveCapacity(items.count)
        for item in items {
            guard case .bulk(let bytes) = item, let keyId = try? KeyID(bytes) else {
                return .failure(StoreUnavailable(.protocolError, detail: "corrupt keyId in account index"))
            }
            keyIds.append(keyId)
        }
        return .success(keyIds)
    }
}
