import GatewayStore

/// The device-key commands of `MeasuredStore`, counted under the command they stand beside: a
/// device-key registration (and the App Attest key that vouched for it) as `register_key`, a signed request's commit as `commit_assertion`, a
/// refused registration's back-off as `register_key`.
extension MeasuredStore {
    func registerDeviceKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                           completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        inner.registerDeviceKey(record, challenge: challenge, now: now, completion: measured(.registerKey, completion))
    }

    func registerVouchingKey(_ record: KeyRecord,
                             completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        inner.registerVouchingKey(record, completion: measured(.registerKey, completion))
    }

    func commitSignedRequest(keyId: KeyID, challenge: Challenge, now: UnixMillis,
                             completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        inner.commitSignedRequest(keyId: keyId, challenge: challenge, now: now, completion: measured(.commitAssertion, completion))
    }

    func recordRegistrationRefusal(keyId: KeyID, now: UnixMillis,
                                   completion: @escaping @Sendable (Result<RegistrationBackoff, StoreUnavailable>) -> Void) {
        inner.recordRegistrationRefusal(keyId: keyId, now: now, completion: measured(.registerKey, completion))
    }
}
