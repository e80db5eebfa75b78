/// Defaults for stores that predate device keys (test doubles, wrappers): every device-key call
/// fails as an outage (503, fail-closed), never as an acceptance.
extension AttestStore {
    /// Fails with `StoreUnavailable(.closed)`: this store cannot hold device keys.
    public func registerDeviceKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                                  completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        completion(.failure(StoreUnavailable(.closed, detail: "this store does not support device keys")))
    }

    /// Fails with `StoreUnavailable(.closed)`: this store cannot hold device keys.
    public func registerVouchingKey(_ record: KeyRecord,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        completion(.failure(StoreUnavailable(.closed, detail: "this store does not support device keys")))
    }

    /// Fails with `StoreUnavailable(.closed)`: this store cannot hold device keys.
    public func commitSignedRequest(keyId: KeyID, challenge: Challenge, now: UnixMillis,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        completion(.failure(StoreUnavailable(.closed, detail: "this store does not support device keys")))
    }

    /// Fails with `StoreUnavailable(.closed)`: this store cannot hold device keys.
    public func recordRegistrationRefusal(keyId: KeyID, now: UnixMillis,
                                          completion: @escaping @Sendable (Result<RegistrationBackoff, StoreUnavailable>) -> Void) {
        completion(.failure(StoreUnavailable(.closed, detail: "this store does not support device keys")))
    }
}
