import GatewayStore

/// The device-key operations of the Redis store (DESIGN.md section 8), each one Lua script on keys of
/// the device key's hash tag (`RedisScript.registerDevice`, `.commitSigned`, `.registrationRefused`), and the
/// store of the App Attest key that vouched for a registration (`.registerVouching`, under that key's tag).
extension RedisStore {
    /// See `AttestStore.registerDeviceKey` (one Lua script: record written, challenge and back-off deleted).
    public func registerDeviceKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                                  completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 320)
        args.append(decimal: now)
        RedisKeySchema.appendFields(of: record, to: &args)
        let keys = [schema.keyRecordName(record.keyId), schema.challengeName(record.keyId, challenge),
                    schema.registrationBackoffName(record.keyId)]
        runScriptRouted(.registerDevice, keys: keys, args: args) { [self] result, connection in
            acknowledged(result.flatMap(RedisStore.decodeCodeReply), on: connection, completion: completion)
        }
    }

    /// See `AttestStore.registerVouchingKey` (one Lua script on the App Attest key's record, under
    /// its own hash tag: never replaces a record).
    public func registerVouchingKey(_ record: KeyRecord,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 320)
        RedisKeySchema.appendFields(of: record, to: &args)
        runScriptRouted(.registerVouching, keys: [schema.keyRecordName(record.keyId)], args: args) { [self] result, connection in
            acknowledged(result.flatMap(RedisStore.decodeCodeReply), on: connection, completion: completion)
        }
    }

    /// See `AttestStore.commitSignedRequest` (one Lua script, one round trip).
    public func commitSignedRequest(keyId: KeyID, challenge: Challenge, now: UnixMillis,
                                    completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 24)
        args.append(decimal: now)
        let keys = [schema.keyRecordName(keyId), schema.challengeName(keyId, challenge)]
        runScriptRouted(.commitSigned, keys: keys, args: args) { [self] result, connection in
            acknowledged(result.flatMap(RedisStore.decodeCodeReply), on: connection, completion: completion)
        }
    }

    /// See `AttestStore.recordRegistrationRefusal` (one Lua script).
    public func recordRegistrationRefusal(keyId: KeyID, now: UnixMillis,
                                          completion: @escaping @Sendable (Result<RegistrationBackoff, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 64)
        args.append(decimal: now)
        args.append(decimal: RegistrationBackoff.maximumDelay)
        args.append(decimal: RegistrationBackoff.baseDelay)
        runScript(.registrationRefused, keys: [schema.registrationBackoffName(keyId)], args: args) { result in
            completion(result.flatMap { reply in
                guard case .array(let items) = reply, items.count == 2,
                      case .bulk(let countText) = items[0], case .bulk(let retryText) = items[1],
                      let count = RedisCommand.parseDecimal(countText), let retryAt = RedisCommand.parseDecimal(retryText)
                else { return .failure(RedisStore.unexpected(reply)) }
                return .success(RegistrationBackoff(refusals: Int(count), retryAt: retryAt))
            })
        }
    }

    /// `ok` -> accepted; a `StoreRefusal` code -> refused; anything else -> protocol error.
    static func decodeCodeReply(_ reply: RedisReply) -> Result<StoreOutcome<Void>, StoreUnavailable> {
        guard case .bulk(let code) = reply else { return .failure(RedisStore.unexpected(reply)) }
        if reply.isText("ok") { return .success(.accepted(())) }
        guard let refusal = RedisStore.refusal(code) else { return .failure(RedisStore.unexpected(reply)) }
        return .success(.refused(refusal))
    }
}
