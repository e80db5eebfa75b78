/// `KeyLifecycleStore` in memory: each operation is one critical section under `lock`, like the Redis
/// scripts, with the same checks in the same order.
extension MemoryStore: KeyLifecycleStore {
    /// See `KeyLifecycleStore.renewKey` (one critical section).
    public func renewKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, expiresAt: UnixMillis?, now: UnixMillis,
                         completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void) {
        let result: Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            switch checkLifecycle(keyId, challenge: challenge, purpose: .renew, counter: counter, now: now, refuseExpired: true) {
            case .failure(let refusal):
                return .success(.refused(refusal))
            case .success(var record):
                record.expiresAt = expiresAt
                keys[keyId] = record
                challenges[Slot(keyId: keyId, challenge: challenge)] = nil
                return .success(.accepted(KeyLifecycleChange(accountHash: record.accountHash)))
            }
        }
        completion(result)
    }

    /// See `KeyLifecycleStore.forgetKey` (one critical section).
    public func forgetKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, now: UnixMillis,
                          completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void) {
        let result: Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            switch checkLifecycle(keyId, challenge: challenge, purpose: .forget, counter: counter, now: now, refuseExpired: false) {
            case .failure(let refusal):
                return .success(.refused(refusal))
            case .success(let record):
                keys[keyId] = nil
                challenges[Slot(keyId: keyId, challenge: challenge)] = nil
                return .success(.accepted(KeyLifecycleChange(accountHash: record.accountHash)))
            }
        }
        completion(result)
    }

    /// See `KeyLifecycleStore.indexAccountKey` (one critical section).
    public func indexAccountKey(_ account: AccountHash, keyId: KeyID, createdAt: UnixMillis, expiresAt: UnixMillis?,
                                limit: Int, now: UnixMillis,
                                completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        let result: Result<[KeyID], StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            var index = accounts[account] ?? [:]
            index = index.filter { entry in entry.value.expiresAt.map { $0 > now } ?? true }
            index[keyId] = (createdAt, expiresAt)
            var evicted: [KeyID] = []
            if index.count > max(limit, 0) {
                let ordered = MemoryStore.ordered(index)
                evicted = Array(ordered.prefix(index.count - max(limit, 0)))
                for id in evicted { index[id] = nil }
            }
            accounts[account] = index.isEmpty ? nil : index
            return .success(evicted)
        }
        completion(result)
    }

    /// See `KeyLifecycleStore.updateAccountKeyExpiry`.
    public func updateAccountKeyExpiry(_ account: AccountHash, keyId: KeyID, expiresAt: UnixMillis?,
                                       completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        let result: Result<Void, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            if let entry = accounts[account]?[keyId] { accounts[account]?[keyId] = (entry.createdAt, expiresAt) }
            return .success(())
        }
        completion(result)
    }

    /// See `KeyLifecycleStore.removeAccountKey`.
    public func removeAccountKey(_ account: AccountHash, keyId: KeyID,
                                 completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        let result: Result<Bool, StoreUnavailable> = lock.withLock {
            if closed { return .failure(MemoryStore.closedError) }
            guard accounts[account]?.removeValue(forKey: keyId) != nil else { return .success(false) }
            if accounts[account]?.isEmpty == true { accounts[account] = nil }
            return .success(true)
        }
        completion(result)
    }

    /// See `KeyLifecycleStore.accountKeys`.
    public func accountKeys(_ account: AccountHash, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        let result: Result<[KeyID], StoreUnavailable> = lock.withLock {
            closed ? .failure(MemoryStore.closedError) : .success(MemoryStore.ordered(accounts[account] ?? [:]))
        }
        completion(result)
    }

    // MARK: Internals (called with `lock` held)

    /// Oldest first: by createdAt, then by the keyId bytes (the order of a Redis sorted set
    /// whose score is createdAt and whose members are the raw keyIds).
    private static func ordered(_ index: [KeyID: (createdAt: UnixMillis, expiresAt: UnixMillis?)]) -> [KeyID] {
        index.sorted { a, b in
            a.value.createdAt != b.value.createdAt ? a.value.createdAt < b.value.createdAt
                : a.key.bytes.lexicographicallyPrecedes(b.key.bytes)
        }.map(\.key)
    }

    /// The checks shared by renew and forget; on success the record with its counter advanced.
    private func checkLifecycle(_ keyId: KeyID, challenge: Challenge, purpose: ChallengePurpose, counter: UInt32?,
                                now: UnixMillis, refuseExpired: Bool) -> Result<KeyRecord, StoreRefusal> {
        guard var record = keys[keyId] else { return .failure(.keyUnknown) }
        guard record.status == .active else { return .failure(.keyRevoked) }
        if refuseExpired, let expiresAt = record.expiresAt, now >= expiresAt { return .failure(.keyExpired) }
        if let refusal = checkChallenge(Slot(keyId: keyId, challenge: challenge), purpose: purpose, now: now) {
            return .failure(refusal)
        }
        if let counter {
            guard let admitted = record.replayWindow.admit(counter: counter, highest: record.counter, size: 0) else {
                return .failure(.counterReplay)
            }
            record.counter = admitted.highest
            record.replayWindow = admitted.window
        }
        return .success(record)
    }
}
