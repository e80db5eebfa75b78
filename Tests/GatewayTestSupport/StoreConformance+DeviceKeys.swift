import Dispatch
import GatewayRules
import GatewayStore

/// The device-key checks of the conformance suite (DESIGN.md section 8): `registerDeviceKey`,
/// `registerVouchingKey`, `commitSignedRequest` and `recordRegistrationRefusal`, each with its
/// passing case and its refusals, which change nothing.
extension StoreConformance {
    /// Every device-key check, by name (kept apart from `checks` so that suites list them separately).
    public static let deviceKeyChecks: [(name: String, run: @Sendable (StoreConformance) throws -> Void)] = [
        ("deviceKeyRoundTrip", { try $0.deviceKeyRoundTrip() }),
        ("deviceRegistrationRefusalsChangeNothing", { try $0.deviceRegistrationRefusalsChangeNothing() }),
        ("signedRequestCommitsOnceAndRefusalsChangeNothing", { try $0.signedRequestCommitsOnceAndRefusalsChangeNothing() }),
        ("signedRequestRaceAcceptedOnce", { try $0.signedRequestRaceAcceptedOnce() }),
        ("registrationBackoffDoublesAndClears", { try $0.registrationBackoffDoublesAndClears() }),
        ("legacyTierReadsAsAttested", { try $0.legacyTierReadsAsAttested() }),
        ("expiredDeviceRegistrationIsReplaced", { try $0.expiredDeviceRegistrationIsReplaced() }),
        ("vouchingKeyStoredOnceNeverReplaced", { try $0.vouchingKeyStoredOnceNeverReplaced() }),
    ]

    /// A device-key record (random point) at `tier`.
    public func makeDeviceRecord(keyId: KeyID? = nil, tier: TrustTier = .device, backing: DeviceKeyBacking = .software,
                                 integrity: [String] = [], platformAttested: Bool = false,
                                 expiresAt: UnixMillis? = nil) throws -> KeyRecord {
        let publicKey = [0x04] + (0..<64).map { _ in UInt8.random(in: 0...255) }
        return try KeyRecord(keyId: keyId ?? randomKeyId(), publicKey: publicKey, environment: .production,
                             appId: "TEAMID1234.com.example.app", createdAt: baseNow - 10, trustTier: tier, expiresAt: expiresAt,
                             backing: backing, integrity: integrity, platformAttested: platformAttested)
    }

    /// registerDeviceKey's outcome (an unavailable store fails the check).
    public func registerDeviceOutcome(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                                      file: StaticString = #filePath, line: UInt = #line) throws -> StoreOutcome<Void> {
        try wait("registerDeviceKey", { store.registerDeviceKey(record, challenge: challenge, now: now, completion: $0) },
                 file: file, line: line)
            .mapError { ConformanceFailure(message: "registerDeviceKey unavailable: \($0)", file: file, line: line) }.get()
    }

    /// commitSignedRequest's outcome (an unavailable store fails the check).
    public func signedOutcome(_ keyId: KeyID, _ challenge: Challenge, now: UnixMillis,
                              file: StaticString = #filePath, line: UInt = #line) throws -> StoreOutcome<Void> {
        try wait("commitSignedRequest", { store.commitSignedRequest(keyId: keyId, challenge: challenge, now: now, completion: $0) },
                 file: file, line: line)
            .mapError { ConformanceFailure(message: "commitSignedRequest unavailable: \($0)", file: file, line: line) }.get()
    }

    /// Issues a `register` challenge and registers `record`, expecting acceptance.
    public func registerDeviceExpectingAccepted(_ record: KeyRecord, file: StaticString = #filePath, line: UInt = #line) throws {
        let challenge = try randomChallenge()
        try issue(challenge, keyId: record.keyId, purpose: .register, expiresAt: baseNow + 300_000, now: baseNow, file: file, line: line)
        let outcome = try registerDeviceOutcome(record, challenge: challenge, now: baseNow, file: file, line: line)
        try expect(outcome.value != nil, "registerDeviceKey: expected accepted, got \(outcome)", file: file, line: line)
    }

    /// recordRegistrationRefusal, expecting success.
    public func refuseRegistration(_ keyId: KeyID, now: UnixMillis, file: StaticString = #filePath, line: UInt = #line) throws -> RegistrationBackoff {
        try wait("recordRegistrationRefusal", { store.recordRegistrationRefusal(keyId: keyId, now: now, completion: $0) },
                 file: file, line: line)
            .mapError { ConformanceFailure(message: "recordRegistrationRefusal unavailable: \($0)", file: file, line: line) }.get()
    }

    // MARK: - Checks

    /// Every device-key field survives the store (both tiers, both backings, with and without codes).
    public func deviceKeyRoundTrip() throws {
        let attested = try makeDeviceRecord(tier: .attested, backing: .secureEnclave, integrity: ["jb_files", "new_code_7"],
                                            platformAttested: true, expiresAt: baseNow + 86_400_000)
        try registerDeviceExpectingAccepted(attested)
        try expect(try fetch(attested.keyId) == attested, "the attested device record reads back with every field")
        let device = try makeDeviceRecord()
        try registerDeviceExpectingAccepted(device)
        let read = try fetch(device.keyId)
        try expect(read == device, "the device record reads back: \(String(describing: read))")
        try expect(read?.platformAttested == false && read?.backing == .software && read?.integrity == [] && read?.trustTier == .device,
                   "tier device, software, no codes, not platform attested")
    }

    /// Refusals of `registerDeviceKey` (unknown, foreign, expired, wrong purpose, existing key) change
    /// nothing; the same challenge then registers the key.
    public func deviceRegistrationRefusalsChangeNothing() throws {
        let record = try makeDeviceRecord()
        let now = baseNow
        func expectRefused(_ challenge: Challenge, at time: UnixMillis, _ refusal: StoreRefusal, line: UInt = #line) throws {
            let outcome = try registerDeviceOutcome(record, challenge: challenge, now: time, line: line)
            try expect(outcome.refusal == refusal, "registerDeviceKey: expected \(refusal.code), got \(outcome)", line: line)
        }
        try expectRefused(try randomChallenge(), at: now, .challengeUnknown)
        let foreign = try randomChallenge()
        try issue(foreign, keyId: try randomKeyId(), purpose: .register, expiresAt: now + 300_000, now: now)
        try expectRefused(foreign, at: now, .challengeUnknown)
        let attest = try randomChallenge()
        try issue(attest, keyId: record.keyId, purpose: .attest, expiresAt: now + 300_000, now: now)
        try expectRefused(attest, at: now, .challengeWrongPurpose)
        let assert = try randomChallenge()
        try issue(assert, keyId: record.keyId, purpose: .assert, expiresAt: now + 300_000, now: now)
        try expectRefused(assert, at: now, .challengeWrongPurpose)
        let pending = try randomChallenge()
        try issue(pending, keyId: record.keyId, purpose: .register, expiresAt: now + 1_000, now: now)
        try expectRefused(pending, at: now + 1_000, .challengeExpired)
        try expect(try fetch(record.keyId) == nil, "no record after refused registrations")
        // A `register` challenge does not register through the attestation path either.
        try expectRegister(record, challenge: pending, now: now, refused: .challengeWrongPurpose)

        let accepted = try registerDeviceOutcome(record, challenge: pending, now: now + 999)
        try expect(accepted.value != nil, "the pending register challenge still registers: \(accepted)")
        try expect(try fetch(record.keyId) == record, "registered")
        // Consumed: a second use is unknown; another register challenge meets key_exists and stays.
        try expectRefused(pending, at: now, .challengeUnknown)
        let again = try randomChallenge()
        try issue(again, keyId: record.keyId, purpose: .register, expiresAt: now + 300_000, now: now)
        let other = try makeDeviceRecord(keyId: record.keyId, tier: .attested, platformAttested: true)
        let exists = try registerDeviceOutcome(other, challenge: again, now: now)
        try expect(exists.refusal == .keyExists, "key_exists, got \(exists)")
        try expect(try fetch(record.keyId) == record, "the first record is kept")
    }

    /// A device key whose registration expired registers again (its record replaced: the device let
    /// it lapse, and the SDK keeps its device key; before, `key_exists` locked it out for good and every
    /// retry spent an App Attest attestation). A live record, a revoked one and one without an expiry
    /// are never replaced (`key_exists`, nothing changed).
    public func expiredDeviceRegistrationIsReplaced() throws {
        func registerAgain(_ record: KeyRecord, at now: UnixMillis) throws -> StoreOutcome<Void> {
            let challenge = try randomChallenge()
            try issue(challenge, keyId: record.keyId, purpose: .register, expiresAt: now + 300_000, now: now)
            return try registerDeviceOutcome(record, challenge: challenge, now: now)
        }
        let lapsing = try makeDeviceRecord(expiresAt: baseNow + 10_000)
        try registerDeviceExpectingAccepted(lapsing)
        let renewed = try makeDeviceRecord(keyId: lapsing.keyId, tier: .device, expiresAt: baseNow + 10_000 + 86_400_000)
        try expect(try registerAgain(renewed, at: baseNow + 9_999).refusal == .keyExists, "a live registration is not replaced")
        try expect(try fetch(lapsing.keyId) == lapsing, "the live record is kept")
        try expect(try registerAgain(renewed, at: baseNow + 10_000).value != nil, "an expired registration is replaced")
        try expect(try fetch(lapsing.keyId) == renewed, "the new record, whole (no field of the old one left)")

        let revoked = try makeDeviceRecord(expiresAt: baseNow + 10_000)
        try registerDeviceExpectingAccepted(revoked)
        try expect(try wait("revokeKey") { store.revokeKey(revoked.keyId, completion: $0) }.get() == true, "revoked")
        let revokedRecord = try fetch(revoked.keyId)
        let retry = try makeDeviceRecord(keyId: revoked.keyId, expiresAt: baseNow + 90_000_000)
        try expect(try registerAgain(retry, at: baseNow + 20_000).refusal == .keyExists, "a revoked record is never replaced")
        try expect(try fetch(revoked.keyId) == revokedRecord, "the revoked record is kept")

        let forever = try makeDeviceRecord(expiresAt: nil)
        try registerDeviceExpectingAccepted(forever)
        let later = try makeDeviceRecord(keyId: forever.keyId, expiresAt: baseNow + 90_000_000)
        try expect(try registerAgain(later, at: baseNow + 80_000_000).refusal == .keyExists, "a record without an expiry is not replaced")
        try expect(try fetch(forever.keyId) == forever, "kept")
    }

    /// registerVouchingKey's outcome (an unavailable store fails the check).
    public func vouchingOutcome(_ record: KeyRecord, file: StaticString = #filePath, line: UInt = #line) throws -> StoreOutcome<Void> {
        try wait("registerVouchingKey", { store.registerVouchingKey(record, completion: $0) }, file: file, line: line)
            .mapError { ConformanceFailure(message: "registerVouchingKey unavailable: \($0)", file: file, line: line) }.get()
    }

    /// `registerVouchingKey` (the App Attest key of `/register`'s attestation form) writes the whole
    /// App Attest record without a challenge, leaves the key's pending challenges alone, and the key
    /// then commits assertions; any existing record of the keyId is never replaced (`key_exists`,
    /// nothing changed): one whose counter advanced (the counter never goes back), a revoked one, an
    /// expired one, a device key's.
    public func vouchingKeyStoredOnceNeverReplaced() throws {
        let record = try makeRecord(receipt: Array("receipt-bytes".utf8), riskMetric: 3, receiptExpiresAt: baseNow + 86_400_000,
                                    expiresAt: baseNow + 3_600_000)
        let pending = try issueAssert(record.keyId)
        try expect(try vouchingOutcome(record).value != nil, "stored")
        try expect(try fetch(record.keyId) == record, "the record reads back with every field")
        try expectCommit(record.keyId, pending, counter: 5, now: baseNow, accepted: true, context: "the challenge issued before is untouched")
        try expectCommit(record.keyId, try issueAssert(record.keyId), counter: 5, now: baseNow, accepted: false, refusedAs: .counterReplay)
        let advanced = try fetch(record.keyId)
        try expect(advanced?.counter == 5, "counter advanced: \(String(describing: advanced))")
        let again = try makeRecord(keyId: record.keyId, expiresAt: baseNow + 90_000_000)
        try expect(try vouchingOutcome(again).refusal == .keyExists, "an existing record is never replaced")
        try expect(try fetch(record.keyId) == advanced, "the counter did not go back, nothing changed")

        let revoked = try makeRecord()
        try expect(try vouchingOutcome(revoked).value != nil, "stored")
        try expect(try wait("revokeKey") { store.revokeKey(revoked.keyId, completion: $0) }.get() == true, "revoked")
        let revokedRecord = try fetch(revoked.keyId)
        try expect(try vouchingOutcome(try makeRecord(keyId: revoked.keyId)).refusal == .keyExists, "a revoked record is kept")
        try expect(try fetch(revoked.keyId) == revokedRecord, "still revoked")

        let expired = try makeRecord(expiresAt: baseNow - 1)
        try expect(try vouchingOutcome(expired).value != nil, "stored")
        try expect(try vouchingOutcome(try makeRecord(keyId: expired.keyId, expiresAt: baseNow + 90_000_000)).refusal == .keyExists,
                   "an expired record is not replaced either")
        try expect(try fetch(expired.keyId) == expired, "kept")

        let device = try makeDeviceRecord(expiresAt: baseNow + 10_000)
        try registerDeviceExpectingAccepted(device)
        try expect(try vouchingOutcome(try makeRecord(keyId: device.keyId)).refusal == .keyExists, "a device key's record is kept")
        try expect(try fetch(device.keyId) == device, "kept")
    }

    /// `commitSignedRequest` consumes an `assert` challenge once; its refusals (unknown key, wrong
    /// purpose, expired challenge, revoked or expired key) change nothing.
    public func signedRequestCommitsOnceAndRefusalsChangeNothing() throws {
        let record = try makeDeviceRecord(expiresAt: baseNow + 10_000)
        try expect(try signedOutcome(record.keyId, try randomChallenge(), now: baseNow).refusal == .keyUnknown, "key_unknown first")
        try registerDeviceExpectingAccepted(record)
        let register = try randomChallenge()
        try issue(register, keyId: record.keyId, purpose: .register, expiresAt: baseNow + 300_000, now: baseNow)
        try expect(try signedOutcome(record.keyId, register, now: baseNow).refusal == .challengeWrongPurpose, "a register challenge is not an assert one")
        let pending = try issueAssert(record.keyId)
        try expect(try signedOutcome(record.keyId, try randomChallenge(), now: baseNow).refusal == .challengeUnknown,
                   "an unknown challenge is refused")
        try expect(try signedOutcome(record.keyId, pending, now: baseNow + 300_000).refusal == .keyExpired,
                   "the registration expired before the challenge")
        try expect(try signedOutcome(record.keyId, pending, now: baseNow).value != nil, "accepted once")
        try expect(try signedOutcome(record.keyId, pending, now: baseNow).refusal == .challengeUnknown, "a replay is refused")
        try expect(try fetch(record.keyId) == record, "the record is unchanged by signed requests")
        let late = try issueAssert(record.keyId)
        try expect(try wait("revokeKey") { store.revokeKey(record.keyId, completion: $0) }.get() == true, "revoked")
        try expect(try signedOutcome(record.keyId, late, now: baseNow).refusal == .keyRevoked, "key_revoked")
    }

    /// The same signed request raced from many threads is accepted exactly once.
    public func signedRequestRaceAcceptedOnce() throws {
        let record = try makeDeviceRecord()
        try registerDeviceExpectingAccepted(record)
        let challenge = try issueAssert(record.keyId)
        let now = baseNow
        let outcomes = try race(count: 16) { (_, done: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) in
            store.commitSignedRequest(keyId: record.keyId, challenge: challenge, now: now, completion: done)
        }
        try expect(outcomes.filter { $0.value != nil }.count == 1, "exactly one acceptance")
        try expect(outcomes.allSatisfy { $0.value != nil || $0.refusal == .challengeUnknown }, "the others are challenge_unknown")
    }

    /// One hour, doubling per refusal in a row, seven days at most; a registration clears it.
    public func registrationBackoffDoublesAndClears() throws {
        let record = try makeDeviceRecord()
        var expected: [UnixMillis] = []
        for n in 1...10 { expected.append(min(3_600_000 << UnixMillis(n - 1), 604_800_000)) }
        for (i, delay) in expected.enumerated() {
            let now = baseNow + UnixMillis(i)
            let backoff = try refuseRegistration(record.keyId, now: now)
            try expect(backoff == RegistrationBackoff(refusals: i + 1, retryAt: now + delay),
                       "refusal \(i + 1): expected retryAt now+\(delay), got \(backoff)")
        }
        let other = try refuseRegistration(try randomKeyId(), now: baseNow)
        try expect(other.refusals == 1, "counted per device key")
        try registerDeviceExpectingAccepted(record)
        let afterSuccess = try refuseRegistration(record.keyId, now: baseNow)
        try expect(afterSuccess == RegistrationBackoff(refusals: 1, retryAt: baseNow + 3_600_000),
                   "a successful registration starts the count again: \(afterSuccess)")
    }

    /// A record stored with tier `app_attest` (before tiers existed) reads as an attested App Attest key.
    public func legacyTierReadsAsAttested() throws {
        let record = try makeRecord()
        try registerExpectingAccepted(record)
        let read = try fetch(record.keyId)
        try expect(read?.trustTier == .appAttest && read?.trustTier.effective == .attested, "app_attest reads as attested")
        try expect(read?.platformAttested == true && read?.backing == nil && read?.integrity == [], "an App Attest key")
        try expect(read?.trustTier.satisfies(.attested) == true && read?.trustTier.satisfies(.device) == true,
                   "passes both min_tier values")
        try expect(TrustTier.device.satisfies(.attested) == false && TrustTier(rawValue: "future")?.satisfies(.device) == false,
                   "device does not pass attested; an unknown tier passes nothing")
    }
}
