/// The refresher's state of the memory store (one process: the lease only matters across replicas,
/// but it is kept with the same semantics so both stores pass the same tests).
struct MemoryReceiptRefreshState {
    /// keyId -> due time (ms).
    var due: [KeyID: UnixMillis] = [:]
    /// keyId -> (owner, expiry on the store's clock, ms).
    var leases: [KeyID: (owner: String, until: UnixMillis)] = [:]
}

extension MemoryStore: ReceiptRefreshStore {
    /// See `ReceiptRefreshStore.scheduleRefresh`.
    public func scheduleRefresh(_ keyId: KeyID, dueAt: UnixMillis, onlyIfAbsent: Bool,
                                completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        completion(withOpenState { state, _ in
            if onlyIfAbsent && state.refresh.due[keyId] != nil { return }
            state.refresh.due[keyId] = dueAt
        })
    }

    /// See `ReceiptRefreshStore.unscheduleRefresh`.
    public func unscheduleRefresh(_ keyId: KeyID, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        completion(withOpenState { state, _ in state.refresh.due[keyId] = nil })
    }

    /// See `ReceiptRefreshStore.refreshDueTime`.
    public func refreshDueTime(_ keyId: KeyID, completion: @escaping @Sendable (Result<UnixMillis?, StoreUnavailable>) -> Void) {
        completion(withOpenState { state, _ in state.refresh.due[keyId] })
    }

    /// See `ReceiptRefreshStore.releaseRefreshLease`.
    public func releaseRefreshLease(_ keyId: KeyID, owner: String, completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        completion(withOpenState { state, _ in
            if state.refresh.leases[keyId]?.owner == owner { state.refresh.leases[keyId] = nil }
        })
    }

    /// See `ReceiptRefreshStore.dueRefreshes`.
    public func dueRefreshes(now: UnixMillis, limit: Int, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        completion(withOpenState { state, _ in
            Array(state.refresh.due.filter { $0.value <= now }.sorted { $0.value < $1.value }.prefix(max(0, limit)).map(\.key))
        })
    }

    /// See `ReceiptRefreshStore.acquireRefreshLease` (the expiry runs on the store's own clock).
    public func acquireRefreshLease(_ keyId: KeyID, owner: String, ttl: UnixMillis,
                                    completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        completion(withOpenState { state, clockNow in
            if let lease = state.refresh.leases[keyId], lease.until > clockNow, lease.owner != owner { return false }
            state.refresh.leases[keyId] = (owner, clockNow.addingClamped(max(1, ttl)))
            return true
        })
    }

    /// See `ReceiptRefreshStore.storeRefreshedReceipt`.
    public func storeRefreshedReceipt(_ keyId: KeyID, receipt: [UInt8], riskMetric: UInt32?, observedAt: UnixMillis,
                                      receiptExpiresAt: UnixMillis?, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        completion(withOpenState { state, _ in
            guard var record = state.keys[keyId] else { return false }
            record.receipt = receipt
            record.receiptRiskMetric = riskMetric
            record.riskObservedAt = observedAt
            record.receiptExpiresAt = receiptExpiresAt
            record.riskState = .fresh
            state.keys[keyId] = record
            return true
        })
    }

    /// See `ReceiptRefreshStore.markRisk`.
    public func markRisk(_ keyId: KeyID, state riskState: RiskMetricState,
                         completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        completion(withOpenState { state, _ in
            guard state.keys[keyId] != nil else { return false }
            state.keys[keyId]?.riskState = riskState
            return true
        })
    }
}
