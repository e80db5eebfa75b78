import GatewayStore

extension RedisScript {
    /// `storeRefreshedReceipt`. KEYS[1] key record hash. ARGV: receipt, risk metric (`''` = none),
    /// observedAt (ms), receipt expiry (ms, `''` = none). Returns 0 when the record does not exist
    /// (nothing is created), else 1 after replacing `rcpt`, `risk`, `riskat`, `rcptexp` and setting
    /// `riskst` to `fresh` (one HSET; absent values are deleted after it).
    static let storeRefreshedReceipt = RedisScript("""
        if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
        redis.call('HSET', KEYS[1], 'rcpt', ARGV[1], 'riskat', ARGV[3], 'riskst', 'fresh')
        if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'risk', ARGV[2]) else redis.call('HDEL', KEYS[1], 'risk') end
        if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'rcptexp', ARGV[4]) else redis.call('HDEL', KEYS[1], 'rcptexp') end
        return 1
        """, sha1: "24fa00332ec333d5f96e4c941944d0434d6be742")

    /// `markRisk`. KEYS[1] key record hash. ARGV[1] state. Returns 0 when the record does not exist,
    /// else 1 after setting `riskst`.
    static let markRisk = RedisScript("""
        if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
        redis.call('HSET', KEYS[1], 'riskst', ARGV[1])
        return 1
        """, sha1: "979f2048db740e5a24800189f06fabb5c8259bfc")

    /// `acquireRefreshLease`. KEYS[1] lease key. ARGV: owner, ttl (ms). Returns 1 when the lease was
    /// taken (`SET NX PX`) or extended (held by the same owner), 0 when another owner holds it.
    static let acquireLease = RedisScript("""
        if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
        if redis.call('GET', KEYS[1]) == ARGV[1] then
          redis.call('PEXPIRE', KEYS[1], ARGV[2])
          return 1
        end
        return 0
        """, sha1: "9a4c3aa8290359226616eedaa6a3156c2374ff6d")

    /// `releaseRefreshLease`. KEYS[1] lease key. ARGV[1] owner. Deletes the lease when the owner holds
    /// it; returns 1 then, else 0.
    static let releaseLease = RedisScript("""
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
        return 0
        """, sha1: "7f8f6677b8f2b4b65b9b9905151ced126e6b7e49")

    /// The refresher's scripts (sent with EVALSHA, falling back to EVAL on `NOSCRIPT`: they are not
    /// loaded at connect, the refresher runs them rarely).
    static let receiptRefresh: [RedisScript] = [storeRefreshedReceipt, markRisk, acquireLease, releaseLease]
}

extension RedisKeySchema {
    /// `<prefix>:risk:due`: the fleet's refresh schedule (sorted set, score = due time in ms).
    var refreshScheduleName: [UInt8] { prefix + Array(":risk:due".utf8) }

    /// `<prefix>:{<keyId b64url>}:risklease`.
    func refreshLeaseName(_ keyId: KeyID) -> [UInt8] {
        prefix + [0x3a, 0x7b] + keyId.base64URL + Array("}:risklease".utf8)
    }

    /// The risk fields of a commit reply (`''` = absent); unreadable values count as absent.
    static func decodeRisk(_ metric: RedisReply, _ observedAt: RedisReply, _ state: RedisReply, _ expiresAt: RedisReply) -> RiskSnapshot {
        func bytes(_ reply: RedisReply) -> [UInt8]? {
            if case .bulk(let b) = reply, !b.isEmpty { return b }
            return nil
        }
        let value = bytes(metric).flatMap(RedisCommand.parseDecimal).flatMap { UInt32(exactly: $0) }
        let at = bytes(observedAt).flatMap(RedisCommand.parseDecimal)
        let riskState = bytes(state).flatMap { RiskMetricState(rawValue: String(decoding: $0, as: UTF8.self)) }
        let expiry = bytes(expiresAt).flatMap(RedisCommand.parseDecimal)
        return RiskSnapshot(metric: value, observedAt: at, state: riskState, receiptExpiresAt: expiry)
    }
}

extension RedisStore: ReceiptRefreshStore {
    /// See `ReceiptRefreshStore.scheduleRefresh` (`ZADD [NX] <p>:risk:due`).
    public func scheduleRefresh(_ keyId: KeyID, dueAt: UnixMillis, onlyIfAbsent: Bool,
                                completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 96)
        command.append("ZADD")
        command.append(schema.refreshScheduleName)
        if onlyIfAbsent { command.append("NX") }
        command.append(decimal: dueAt)
        command.append(keyId.base64URL)
        send(command, key: schema.refreshScheduleName) { result in
            completion(RedisStore.failErrorReplies(result).map { _ in () })
        }
    }

    /// See `ReceiptRefreshStore.unscheduleRefresh` (`ZREM`).
    public func unscheduleRefresh(_ keyId: KeyID, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 96)
        command.append("ZREM")
        command.append(schema.refreshScheduleName)
        command.append(keyId.base64URL)
        send(command, key: schema.refreshScheduleName) { result in
            completion(RedisStore.failErrorReplies(result).map { _ in () })
        }
    }

    /// See `ReceiptRefreshStore.refreshDueTime` (`ZSCORE`).
    public func refreshDueTime(_ keyId: KeyID, completion: @escaping @Sendable (Result<UnixMillis?, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 96)
        command.append("ZSCORE")
        command.append(schema.refreshScheduleName)
        command.append(keyId.base64URL)
        send(command, key: schema.refreshScheduleName) { result in
            completion(RedisStore.failErrorReplies(result).flatMap { reply in
                switch reply {
                case .null: return .success(nil)
                case .bulk(let text):
                    // Scores are doubles: "1800000000000" or "1.8e+12" for large ones.
                    guard let value = Double(String(decoding: text, as: UTF8.self)), value.isFinite else {
                        return .failure(RedisStore.unexpected(reply))
                    }
                    return .success(UnixMillis(value))
                default: return .failure(RedisStore.unexpected(reply))
                }
            })
        }
    }

    /// See `ReceiptRefreshStore.releaseRefreshLease` (compare-and-delete script).
    public func releaseRefreshLease(_ keyId: KeyID, owner: String, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 64)
        args.append(owner.utf8)
        runScript(.releaseLease, keys: [schema.refreshLeaseName(keyId)], args: args) { result in
            completion(result.map { _ in () })
        }
    }

    /// See `ReceiptRefreshStore.dueRefreshes` (`ZRANGEBYSCORE -inf now LIMIT 0 limit`); members that
    /// are not keyIds are skipped.
    public func dueRefreshes(now: UnixMillis, limit: Int, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 96)
        command.append("ZRANGEBYSCORE")
        command.append(schema.refreshScheduleName)
        command.append("-inf")
        command.append(decimal: now)
        command.append("LIMIT")
        command.append("0")
        command.append(decimal: Int64(max(1, limit)))
        send(command, key: schema.refreshScheduleName) { result in
            completion(RedisStore.failErrorReplies(result).flatMap { reply in
                guard case .array(let items) = reply else { return .failure(RedisStore.unexpected(reply)) }
                var keys: [KeyID] = []
                for item in items {
                    guard case .bulk(let member) = item, let bytes = Base64URL.decode(member), let id = try? KeyID(bytes) else { continue }
                    keys.append(id)
                }
                return .success(keys)
            })
        }
    }

    /// See `ReceiptRefreshStore.acquireRefreshLease` (`SET <p>:{<keyId>}:risklease owner NX PX ttl`).
    public func acquireRefreshLease(_ keyId: KeyID, owner: String, ttl: UnixMillis,
                                    completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 64)
        args.append(owner.utf8)
        args.append(decimal: max(1, ttl))
        runScript(.acquireLease, keys: [schema.refreshLeaseName(keyId)], args: args) { result in
            completion(result.flatMap(RedisStore.flag))
        }
    }

    /// See `ReceiptRefreshStore.storeRefreshedReceipt` (one Lua script).
    public func storeRefreshedReceipt(_ keyId: KeyID, receipt: [UInt8], riskMetric: UInt32?, observedAt: UnixMillis,
                                      receiptExpiresAt: UnixMillis?, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: receipt.count + 96)
        args.append(receipt)
        if let riskMetric { args.append(decimal: Int64(riskMetric)) } else { args.append("") }
        args.append(decimal: observedAt)
        if let receiptExpiresAt { args.append(decimal: receiptExpiresAt) } else { args.append("") }
        runScript(.storeRefreshedReceipt, keys: [schema.keyRecordName(keyId)], args: args) { result in
            completion(result.flatMap(RedisStore.flag))
        }
    }

    /// See `ReceiptRefreshStore.markRisk` (one Lua script).
    public func markRisk(_ keyId: KeyID, state: RiskMetricState, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 16)
        args.append(state.rawValue.utf8)
        runScript(.markRisk, keys: [schema.keyRecordName(keyId)], args: args) { result in
            completion(result.flatMap(RedisStore.flag))
        }
    }

    private static func flag(_ reply: RedisReply) -> Result<Bool, StoreUnavailable> {
        switch reply {
        case .integer(0): return .success(false)
        case .integer(1): return .success(true)
        default: return .failure(unexpected(reply))
        }
    }
}
