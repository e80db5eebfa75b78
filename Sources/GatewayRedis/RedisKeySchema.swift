import GatewayRules
import GatewayStore

/// Redis key names and hash fields of the store (DESIGN.md section 4).
///
/// Keys (`<p>` = the configured prefix, `aa` by default; base64url unpadded, RFC 4648 section 5):
/// - `<p>:{<keyId>}:key` - hash, the key record, no TTL (needs `maxmemory-policy noeviction`: an evicted
///   record would turn a registered key into `key_unknown`, and a lost counter would re-open replays);
/// - `<p>:{<keyId>}:ch:<challenge>` - hash `p` (purpose) and `exp` (expiresAt, ms), TTL = lifetime + grace;
/// - `<p>:{fleet}:<name>:<window>` - a fleet-wide counter (`acquireFleetSlot`), TTL two windows.
/// The `{keyId}` hash tag puts all records of a key in one Redis Cluster slot, as every script requires.
///
/// Key record fields: `pk` public key (65 bytes), `ctr` highest counter (decimal), `win` replay window
/// (16 bytes, `ReplayWindow` layout; absent = empty), `env` `development`|`production`, `app` appId,
/// `created` ms, `rcpt` receipt bytes, `risk` receipt risk metric, `rcptexp` receipt expiry ms, `status`
/// `active`|`revoked`, `tier` trust tier, `exp` registration expiry ms, `acct` account hash (32 bytes,
/// `AccountHash`), `v` schema version (`1`); device keys (DESIGN.md section 8) add `bk` backing,
/// `integ` integrity codes joined by `,` (absent when none) and `pa` `1`|`0` (platform attested; absent
/// on records written before device keys: read from the tier). Optional fields are absent when nil.
///
/// `<p>:{<keyId>}:regoff` - hash `n`, `retry`: the device key's `RegistrationBackoff`, with a TTL.
///
/// Account index (`KeyLifecycleStore`), under the account's own hash tag:
/// - `<p>:{acct:<hash>}:keys` - sorted set, member raw keyId, score createdAt ms;
/// - `<p>:{acct:<hash>}:exp` - hash, raw keyId -> registration expiry ms (absent: never expires).
/// Written by the receipt refresher: `riskat` creation time (ms) of the receipt carrying `risk`,
/// `riskst` `fresh`|`stale`|`stopped` (`RiskMetricState`).
struct RedisKeySchema: Sendable {
    /// Key prefix bytes (`aa` by default).
    let prefix: [UInt8]

    private static let keySuffix: [UInt8] = Array("}:key".utf8)
    private static let challengeInfix: [UInt8] = Array("}:ch:".utf8)

    /// `<prefix>:{<keyId b64url>}:key`.
    func keyRecordName(_ keyId: KeyID) -> [UInt8] {
        var name = [UInt8]()
        name.reserveCapacity(prefix.count + 2 + keyId.base64URL.count + 5)
        name.append(contentsOf: prefix)
        name.append(0x3a); name.append(0x7b)  // ":{"
        name.append(contentsOf: keyId.base64URL)
        name.append(contentsOf: RedisKeySchema.keySuffix)
        return name
    }

    /// `<prefix>:{<keyId b64url>}:ch:<challenge b64url>`.
    func challengeName(_ keyId: KeyID, _ challenge: Challenge) -> [UInt8] {
        var name = [UInt8]()
        name.reserveCapacity(prefix.count + 2 + keyId.base64URL.count + 5 + challenge.base64URL.count)
        name.append(contentsOf: prefix)
        name.append(0x3a); name.append(0x7b)
        name.append(contentsOf: keyId.base64URL)
        name.append(contentsOf: RedisKeySchema.challengeInfix)
        name.append(contentsOf: challenge.base64URL)
        return name
    }

    /// `<prefix>:{acct:<hash b64url>}:<suffix>` (suffix `keys` or `exp`).
    func accountName(_ account: AccountHash, _ suffix: StaticString) -> [UInt8] {
        var name = [UInt8]()
        name.reserveCapacity(prefix.count + 8 + account.base64URL.count + 2 + suffix.utf8CodeUnitCount)
        name.append(contentsOf: prefix)
        name.append(contentsOf: Array(":{acct:".utf8))
        name.append(contentsOf: account.base64URL)
        name.append(contentsOf: Array("}:".utf8))
        name.append(contentsOf: UnsafeBufferPointer(start: suffix.utf8Start, count: suffix.utf8CodeUnitCount))
        return name
    }

    private static let backoffSuffix: [UInt8] = Array("}:regoff".utf8)

    /// `<prefix>:{<keyId b64url>}:regoff` (the device key's registration back-off).
    func registrationBackoffName(_ keyId: KeyID) -> [UInt8] {
        var name = [UInt8]()
        name.reserveCapacity(prefix.count + 2 + keyId.base64URL.count + 8)
        name.append(contentsOf: prefix)
        name.append(0x3a); name.append(0x7b)
        name.append(contentsOf: keyId.base64URL)
        name.append(contentsOf: RedisKeySchema.backoffSuffix)
        return name
    }

    /// `<prefix>:{fleet}:<name>:<window index>`: a fleet-wide counter (`acquireFleetSlot`); every
    /// fleet counter shares the `{fleet}` hash tag.
    func fleetCounterName(_ name: String, window: Int64) -> [UInt8] {
        var out = prefix
        out.append(contentsOf: ":{fleet}:".utf8)
        out.append(contentsOf: name.utf8)
        out.append(0x3a)
        out.append(contentsOf: String(window).utf8)
        return out
    }

    /// Fields read by `fetchKey`, in the order of `HMGET`.
    static let fetchFields: [StaticString] = ["pk", "ctr", "win", "env", "app", "created", "rcpt", "risk", "rcptexp",
                                              "status", "tier", "exp", "acct", "bk", "integ", "pa", "riskat", "riskst"]

    /// Appends the record's field/value pairs (for `HSET` in the register script).
    static func appendFields(of record: KeyRecord, to command: inout RedisCommand) {
        command.append("v"); command.append("1")
        command.append("pk"); command.append(record.publicKey)
        command.append("ctr"); command.append(decimal: Int64(record.counter))
        if !record.replayWindow.isEmpty { command.append("win"); command.append(record.replayWindow.bytes) }
        command.append("env"); command.append(record.environment.rawValue.utf8)
        command.append("app"); command.append(record.appId.utf8)
        command.append("created"); command.append(decimal: record.createdAt)
        if let receipt = record.receipt { command.append("rcpt"); command.append(receipt) }
        if let risk = record.receiptRiskMetric { command.append("risk"); command.append(decimal: Int64(risk)) }
        if let expiry = record.receiptExpiresAt { command.append("rcptexp"); command.append(decimal: expiry) }
        command.append("status"); command.append(record.status.rawValue.utf8)
        command.append("tier"); command.append(record.trustTier.rawValue.utf8)
        if let expiresAt = record.expiresAt { command.append("exp"); command.append(decimal: expiresAt) }
        if let account = record.accountHash { command.append("acct"); command.append(account.bytes) }
        if let backing = record.backing { command.append("bk"); command.append(backing.rawValue.utf8) }
        if !record.integrity.isEmpty { command.append("integ"); command.append(record.integrity.joined(separator: ",").utf8) }
        if record.backing != nil {
            command.append("pa")
            if record.platformAttested { command.append("1") } else { command.append("0") }
        }
    }

    /// Decodes the `HMGET` reply of `fetchFields`.
    /// - Returns: `.success(nil)` when the record does not exist; `.failure` when it is corrupt.
    static func decodeRecord(_ keyId: KeyID, _ reply: RedisReply) -> Result<KeyRecord?, StoreUnavailable> {
        guard case .array(let values) = reply, values.count == fetchFields.count else {
            return .failure(StoreUnavailable(.protocolError, detail: "unexpected HMGET reply"))
        }
        func bytes(_ i: Int) -> [UInt8]? { if case .bulk(let b) = values[i] { return b }; return nil }
        func text(_ i: Int) -> String? { bytes(i).map { String(decoding: $0, as: UTF8.self) } }
        func number(_ i: Int) -> Int64?? {
            guard let b = bytes(i) else { return .some(nil) }
            guard let n = RedisCommand.parseDecimal(b) else { return nil }
            return .some(n)
        }
        guard let publicKey = bytes(0) else {
            // No public key: no record (every written record has one).
            if values.allSatisfy({ $0 == .null }) { return .success(nil) }
            return .failure(corrupt(keyId, "pk missing"))
        }
        guard let counterValue = number(1), let counter64 = counterValue, let counter = UInt32(exactly: counter64),
              let window = ReplayWindow(bytes: bytes(2) ?? []),
              let environment = text(3).flatMap(AppAttestEnvironment.init(rawValue:)),
              let appId = text(4),
              let createdValue = number(5), let createdAt = createdValue,
              let riskValue = number(7), let receiptExpiresAt = number(8),
              let status = text(9).flatMap(KeyStatus.init(rawValue:)),
              let tier = text(10).flatMap(TrustTier.init(rawValue:)),
              let expiresAt = number(11)
        else { return .failure(corrupt(keyId, "field missing or malformed")) }
        var account: AccountHash?
        if let accountBytes = bytes(12) {
            guard let value = try? AccountHash(accountBytes) else { return .failure(corrupt(keyId, "acct")) }
            account = value
        }
        var backing: DeviceKeyBacking?
        if let text = text(13) {
            guard let value = DeviceKeyBacking(rawValue: text) else { return .failure(corrupt(keyId, "bk")) }
            backing = value
        }
        let integrity = text(14).map { $0.split(separator: ",").map(String.init) } ?? []
        var platformAttested: Bool?
        if let text = text(15) {
            guard text == "1" || text == "0" else { return .failure(corrupt(keyId, "pa")) }
            platformAttested = text == "1"
        }
        var risk: UInt32?
        if let riskNumber = riskValue {
            guard let value = UInt32(exactly: riskNumber) else { return .failure(corrupt(keyId, "risk")) }
            risk = value
        }
        guard let riskObservedAt = number(16) else { return .failure(corrupt(keyId, "riskat")) }
        var riskState: RiskMetricState?
        if let text = text(17) {
            guard let state = RiskMetricState(rawValue: text) else { return .failure(corrupt(keyId, "riskst")) }
            riskState = state
        }
        do {
            var record = try KeyRecord(keyId: keyId, publicKey: publicKey, counter: counter, environment: environment,
                                       appId: appId, createdAt: createdAt, receipt: bytes(6), receiptRiskMetric: risk,
                                       receiptExpiresAt: receiptExpiresAt, status: status, trustTier: tier,
                                       expiresAt: expiresAt, replayWindow: window, accountHash: account,
                                       backing: backing, integrity: integrity, platformAttested: platformAttested)
            record.riskObservedAt = riskObservedAt
            record.riskState = riskState
            return .success(record)
        } catch {
            return .failure(corrupt(keyId, "\(error)"))
        }
    }

    private static func corrupt(_ keyId: KeyID, _ what: String) -> StoreUnavailable {
        StoreUnavailable(.protocolError, detail: "corrupt key record \(keyId): \(what)")
    }
}
