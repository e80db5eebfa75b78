import GatewayStore
import GatewayIO

/// `KeyLifecycleStore` through the measured store: renew, forget and the account index counted as
/// `renew_key`, `forget_key` and `account_index`. When the wrapped store has no lifecycle operations
/// (a test double), every call fails as unavailable (`503`), never as a verdict.
extension MeasuredStore: KeyLifecycleStore {
    private var lifecycle: (any KeyLifecycleStore)? { inner as? any KeyLifecycleStore }
    private static let unsupported = StoreUnavailable(.protocolError, detail: "the store has no key lifecycle operations")

    func renewKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, expiresAt: UnixMillis?, now: UnixMillis,
                  completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void) {
        guard let lifecycle else { return completion(.failure(MeasuredStore.unsupported)) }
        lifecycle.renewKey(keyId, challenge: challenge, counter: counter, expiresAt: expiresAt, now: now,
                           completion: measured(.renewKey, completion))
    }

    func forgetKey(_ keyId: KeyID, challenge: Challenge, counter: UInt32?, now: UnixMillis,
                   completion: @escaping @Sendable (Result<StoreOutcome<KeyLifecycleChange>, StoreUnavailable>) -> Void) {
        guard let lifecycle else { return completion(.failure(MeasuredStore.unsupported)) }
        lifecycle.forgetKey(keyId, challenge: challenge, counter: counter, now: now, completion: measured(.forgetKey, completion))
    }

    func indexAccountKey(_ account: AccountHash, keyId: KeyID, createdAt: UnixMillis, expiresAt: UnixMillis?, limit: Int,
                         now: UnixMillis, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        guard let lifecycle else { return completion(.failure(MeasuredStore.unsupported)) }
        lifecycle.indexAccountKey(account, keyId: keyId, createdAt: createdAt, expiresAt: expiresAt, limit: limit, now: now,
                                  completion: measured(.accountIndex, completion))
    }

    func updateAccountKeyExpiry(_ account: AccountHash, keyId: KeyID, expiresAt: UnixMillis?,
                                completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) {
        guard let lifecycle else { return completion(.failure(MeasuredStore.unsupported)) }
        lifecycle.updateAccountKeyExpiry(account, keyId: keyId, expiresAt: expiresAt, completion: measured(.accountIndex, completion))
    }

    func removeAccountKey(_ account: AccountHash, keyId: KeyID,
                          completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        guard let lifecycle else { return completion(.failure(MeasuredStore.unsupported)) }
        lifecycle.removeAccountKey(account, keyId: keyId, completion: measured(.accountIndex, completion))
    }

    func accountKeys(_ account: AccountHash, completion: @escaping @Sendable (Result<[KeyID], StoreUnavailable>) -> Void) {
        guard let lifecycle else { return completion(.failure(MeasuredStore.unsupported)) }
        lifecycle.accountKeys(account, completion: measured(.accountIndex, completion))
    }
}
