import GatewayStore

/// The device-key commands of `MeasuredStore`: a device-key registration as `register_key`, the App
/// Attest key that vouched for it as `register_vouching_key` (a failure there is the access line's
/// `app_attest_key_not_stored`), a signed request's commit as `commit_assertion`, a refused
/// registration's back-off as `registration_refusal`.
extension MeasuredStore {
    func registerDeviceKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                           completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        inner.registerDeviceKey(record, challenge: challenge, now: now, completion: measured(.registerKey, completion))
    }

    func registerVouchingKey(_ record: KeyRecord,
                             completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        inner.registerVouchingKey(record, completion: measured(.registerVouchingKey, completion))
    }

    func commitSignedRequest(keyId: KeyID, challenge: Challenge, now: UnixMillis,
                             completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        inner.commitSignedRequest(keyId: keyId, challenge: challenge, now: now, completion: measured(.commitAssertion, completion))
    }

    func recordRegistrationRefusal(keyId: KeyID, now: UnixMillis,
                                   completion: @escaping @Sendable (Result<RegistrationBackoff, StoreUnavailable>) -> Void) {
        inner.recordRegistrationRefusal(keyId: keyId, now: now, completion: measured(.registrationRefusal, completion))
    }
}
