import AppAttest
import Foundation
import GatewayStore
import GatewayTestSupport
import XCTest

/// `POST /app-attest/v1/register` end to end (DESIGN.md section 8) over real sockets, a real
/// redis-server, device keys held by `openssl` (an independent signer) and App Attest evidence
/// minted by ../shared/tools/ref_device.py: the three forms (device key only, with an attestation,
/// with an assertion of a held App Attest key), and every bad input beside its passing case, each
/// refusal leaving the challenge pending and nothing written.
final class DeviceKeyRegistrationTests: XCTestCase {
    nonisolated(unsafe) static var shared: DeviceKeyEnvironment?  // guarded by `lock`
    static let lock = NSLock()
    var env: DeviceKeyEnvironment!

    override func setUpWithError() throws {
        try super.setUpWithError()
        if !E2EPaths.hasRefDevice { throw XCTSkip(SharedFixtures.absentMessage) }
        Self.lock.lock(); defer { Self.lock.unlock() }
        if Self.shared == nil { Self.shared = try DeviceKeyEnvironment() }
        env = Self.shared
    }

    override func tearDown() {
        env?.clock.reset()
        super.tearDown()
    }

    override class func tearDown() {
        lock.lock(); let environment = shared; shared = nil; lock.unlock()
        environment?.stop()
        super.tearDown()
    }

    private var nowSeconds: Int64 { env.clock.now() / 1000 }

    // MARK: - Device key only

    func testDeviceKeyOnlyRegistersAtTierDeviceOnce() throws {
        let key = try env.makeKey()
        let challenge = try env.challenge(kid: key.kid)
        XCTAssertEqual(try env.redisKeys(kid: key.kid).count, 1, "the pending register challenge")
        let fields = try env.registrationFields(key, challenge: challenge)
        let reply = try env.register(fields)
        XCTAssertEqual(reply.status, 201, "\(reply)")
        XCTAssertEqual(reply.json["kid"] as? String, key.kid)
        XCTAssertEqual(reply.json["tier"] as? String, "device")
        XCTAssertEqual(reply.json["platformAttested"] as? Bool, false)
        XCTAssertEqual(reply.json["platformTokenSpent"] as? Bool, false)
        XCTAssertEqual(reply.json["backing"] as? String, "software")
        XCTAssertEqual(reply.json["integrity"] as? [String], [])
        XCTAssertTrue(reply.json["expiresAt"] is NSNull, "no registration_ttl: \(reply)")
        XCTAssertTrue(reply.json.keys.contains("renewAfter"))
        XCTAssertEqual(try env.redisKeys(kid: key.kid, besidesNextChallengeOf: reply), ["aa:{\(base64URL(key.kid))}:key"],
                       "the challenge was consumed")
        XCTAssertEqual(try env.redisCLI("HGET", "aa:{\(base64URL(key.kid))}:key", "tier"), "device")
        XCTAssertEqual(try env.redisCLI("HGET", "aa:{\(base64URL(key.kid))}:key", "pa"), "0")

        // The same registration again: the challenge is spent.
        assertChallengeRefusal(try env.register(fields), code: "challenge_unknown", notBefore: nowSeconds)
        // A fresh challenge for the registered key: key_exists, the record unchanged.
        let again = try env.registrationFields(key, challenge: try env.challenge(kid: key.kid), backing: "secure_enclave")
        assertRefusal(try env.register(again), status: 409, code: "key_exists")
        XCTAssertEqual(try env.redisCLI("HGET", "aa:{\(base64URL(key.kid))}:key", "bk"), "software")
    }

    func testSignatureByAnotherKeyIsRefusedAndKeepsTheChallenge() throws {
        let key = try env.makeKey(), other = try env.makeKey()
        let challenge = try env.challenge(kid: key.kid)
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge, signer: other)), status: 401,
                      code: "bad_signature")
        // A signature that is not DER.
        var raw = try env.registrationFields(key, challenge: challenge)
        raw["signature"] = Data(repeating: 7, count: 64).base64EncodedString()
        assertRefusal(try env.register(raw), status: 401, code: "signature_encoding")
        XCTAssertEqual(try env.redisKeys(kid: key.kid).count, 1, "nothing written, the challenge pending")
        XCTAssertEqual(try env.register(try env.registrationFields(key, challenge: challenge)).status, 201)
    }

    func testWrongCurveAndPointOffTheCurveAreRefused() throws {
        let key = try env.makeKey()
        let challenge = try env.challenge(kid: key.kid)
        let p384 = try env.makeKey(curve: "secp384r1")
        XCTAssertEqual(p384.point.count, 97)
        assertRefusal(try env.register(try env.registrationFields(p384, challenge: challenge)), status: 400, code: "public_key_invalid")
        var offCurve = key.point
        offCurve[64] ^= 0x01
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge, publicKey: offCurve)), status: 400,
                      code: "public_key_invalid")
        XCTAssertEqual(try env.register(try env.registrationFields(key, challenge: challenge)).status, 201, "the genuine point")
    }

    func testUnknownBackingAndBadIntegrityListsAreRefused() throws {
        let key = try env.makeKey()
        let challenge = try env.challenge(kid: key.kid)
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge, backing: "tpm")), status: 400,
                      code: "backing_unknown")
        let tooMany = (0..<17).map { "code_\($0)" }
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge, integrity: tooMany)), status: 400,
                      code: "integrity_invalid")
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge, integrity: ["/Applications/Cydia.app"])),
                      status: 400, code: "integrity_invalid")
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge, integrity: [String(repeating: "a", count: 33)])),
                      status: 400, code: "integrity_invalid")
        // Sixteen codes, unknown ones included, are recorded as sent.
        let sixteen = ["jb_scheme"] + (1..<16).map { "future_check_\($0)" }
        let reply = try env.register(try env.registrationFields(key, challenge: challenge, backing: "secure_enclave", integrity: sixteen))
        XCTAssertEqual(reply.status, 201, "\(reply)")
        XCTAssertEqual(reply.json["integrity"] as? [String], sixteen)
        XCTAssertEqual(reply.json["backing"] as? String, "secure_enclave")
    }

    func testChallengeOfAnotherPurposeOrKeyIsRefusedWithAFreshRegisterChallenge() throws {
        let key = try env.makeKey(), other = try env.makeKey()
        let attest = try env.challenge(kid: key.kid, purpose: "attest")
        let fresh = assertChallengeRefusal(try env.register(try env.registrationFields(key, challenge: attest)),
                                           code: "challenge_wrong_purpose", notBefore: nowSeconds)
        let foreign = try env.challenge(kid: other.kid)
        assertChallengeRefusal(try env.register(try env.registrationFields(key, challenge: foreign)), code: "challenge_unknown",
                               notBefore: nowSeconds)
        XCTAssertEqual(try env.redisKeys(kid: other.kid).count, 1, "the other key's challenge is still pending")
        let retried = try env.register(try env.registrationFields(key, challenge: try XCTUnwrap(fresh)))
        XCTAssertEqual(retried.status, 201, "the fresh challenge is a register challenge for this key: \(retried)")
        // An expired register challenge.
        let late = try env.makeKey()
        let expiring = try env.challenge(kid: late.kid)
        env.clock.advance(seconds: 301)
        assertChallengeRefusal(try env.register(try env.registrationFields(late, challenge: expiring)), code: "challenge_expired",
                               notBefore: nowSeconds)
    }

    // MARK: - With App Attest

    func testAttestationOverTheClientDataRegistersAtTierAttested() throws {
        let key = try env.makeKey()
        let appKey = try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice)
        let challenge = try env.challenge(kid: key.kid)
        let clientData = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "secure_enclave", integrity: [])
        let attestation = try appKey.attestation(challenge: Data(clientData).base64EncodedString(), appId: E2EEnvironment.appId,
                                                 environment: "development", caDirectory: appKey.caDirectory)
        let reply = try env.register(try env.registrationFields(key, challenge: challenge, backing: "secure_enclave",
                                                                appAttest: ["keyId": appKey.keyId, "attestation": attestation]))
        XCTAssertEqual(reply.status, 201, "\(reply)")
        XCTAssertEqual(reply.json["tier"] as? String, "attested")
        XCTAssertEqual(reply.json["platformAttested"] as? Bool, true)
        XCTAssertEqual(reply.json["platformTokenSpent"] as? Bool, true)
        XCTAssertEqual(try env.redisCLI("HGET", "aa:{\(base64URL(key.kid))}:key", "pa"), "1")

        // Signed requests of this key pass the attested route, with the tier headers upstream.
        let signed = try env.signed(key, target: "/v1/attested/x")
        let forwarded = try env.send("POST", "/v1/attested/x", headers: signed.headers, body: Array("{}".utf8))
        XCTAssertEqual(forwarded.status, 200, "\(forwarded)")
        let echo = try XCTUnwrap(forwarded.echo)
        XCTAssertEqual(echo.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(echo.values("App-Attest-Tier"), ["attested"])
        XCTAssertEqual(echo.values("App-Attest-Platform-Attested"), ["true"])
        XCTAssertEqual(echo.values("App-Attest-Key-Id"), [key.kid])
    }

    func testAttestationOverOtherClientDataIsRefusedWithADoublingRetryAt() throws {
        let key = try env.makeKey()
        let appKey = try env.makeDevice(.ref)
        let challenge = try env.challenge(kid: key.kid)
        // Committed to client data with other integrity codes than the ones sent.
        let otherData = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "software", integrity: ["debugger"])
        let wrong = try appKey.attestation(challenge: Data(otherData).base64EncodedString(), appId: E2EEnvironment.appId,
                                           environment: "development", caDirectory: appKey.caDirectory)
        let fields = try env.registrationFields(key, challenge: challenge, appAttest: ["keyId": appKey.keyId, "attestation": wrong])
        let first = try env.register(fields)
        assertRefusal(first, status: 403, code: "registration_refused", action: "retry")
        let retryAt = try XCTUnwrap((first.json["retryAt"] as? NSNumber)?.int64Value, "\(first)")
        XCTAssertEqual(retryAt - nowSeconds, 3600, accuracy: 2, "one hour after the first refusal")
        XCTAssertTrue((first.json["detail"] as? String)?.contains("nonce_mismatch") == true, "\(first)")
        XCTAssertNotNil(first.header("Retry-After"))
        let second = try env.register(fields)
        let retryAt2 = try XCTUnwrap((second.json["retryAt"] as? NSNumber)?.int64Value, "\(second)")
        XCTAssertEqual(retryAt2 - nowSeconds, 7200, accuracy: 2, "doubled after the second refusal in a row")
        XCTAssertEqual(try env.redisKeys(kid: key.kid), ["aa:{\(base64URL(key.kid))}:ch:\(base64URL(challenge))",
                                                          "aa:{\(base64URL(key.kid))}:regoff"].sorted(),
                       "no record; the challenge pending; the back-off under the key's hash tag")

        let goodData = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "software", integrity: [])
        let good = try appKey.attestation(challenge: Data(goodData).base64EncodedString(), appId: E2EEnvironment.appId,
                                          environment: "development", caDirectory: appKey.caDirectory)
        let reply = try env.register(try env.registrationFields(key, challenge: challenge,
                                                                appAttest: ["keyId": appKey.keyId, "attestation": good]))
        XCTAssertEqual(reply.status, 201, "\(reply)")
        XCTAssertEqual(try env.redisKeys(kid: key.kid, besidesNextChallengeOf: reply), ["aa:{\(base64URL(key.kid))}:key"],
                       "the back-off cleared")
    }

    func testAssertionOfAHeldAppAttestKeyRegistersWithoutSpendingAToken() throws {
        let held = try XCTUnwrap(try env.attestedDevice(.ref) as? RefDevice)
        let key = try env.makeKey()
        let challenge = try env.challenge(kid: key.kid)
        let clientData = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "software", integrity: [])

        // Over other client data (another challenge): the held key's assertion does not verify.
        let otherData = DeviceKeyEnvironment.clientData(challenge: unissuedChallenge(), point: key.point, backing: "software", integrity: [])
        let wrong = try held.rawAssertion(clientData: otherData, counter: 1)
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge,
                                                                  appAttest: ["keyId": held.keyId, "assertion": wrong])),
                      status: 401, code: "bad_signature")
        // From an App Attest key the gateway never attested.
        let stranger = try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice)
        let strangers = try stranger.rawAssertion(clientData: clientData, counter: 1)
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge,
                                                                  appAttest: ["keyId": stranger.keyId, "assertion": strangers])),
                      status: 401, code: "key_unknown")
        // A device key is not an App Attest key.
        let deviceKey = try env.registeredKey()
        assertRefusal(try env.register(try env.registrationFields(key, challenge: challenge,
                                                                  appAttest: ["keyId": deviceKey.kid, "assertion": strangers])),
                      status: 401, code: "evidence_kind_mismatch")
        XCTAssertEqual(try env.redisKeys(kid: key.kid).count, 1, "no back-off without a spent attestation; challenge pending")

        let assertion = try held.rawAssertion(clientData: clientData, counter: 1)
        let reply = try env.register(try env.registrationFields(key, challenge: challenge,
                                                                appAttest: ["keyId": held.keyId, "assertion": assertion]))
        XCTAssertEqual(reply.status, 201, "\(reply)")
        XCTAssertEqual(reply.json["tier"] as? String, "attested")
        XCTAssertEqual(reply.json["platformAttested"] as? Bool, true)
        XCTAssertEqual(reply.json["platformTokenSpent"] as? Bool, false)
    }

    /// The App Attest key of the attestation form is stored as `/attest` stores one (before, only
    /// `/attest` stored App Attest keys, so this key answered `401 key_unknown` when it vouched later
    /// and the SDK backed off for an hour): it then vouches for another device key with the assertion
    /// form, signs protected requests (replays and old counters still refused), and a later attestation
    /// of the same key never resets its record.
    func testAttestationFormKeyVouchesLaterWithAnAssertionAndSignsRequests() throws {
        let appKey = try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice)
        let registered = try env.registerAttested(by: appKey).reply
        XCTAssertEqual(registered.status, 201, "\(registered)")
        let appRecord = "aa:{\(base64URL(appKey.keyId))}:key"
        XCTAssertEqual(try env.redisCLI("HGET", appRecord, "ctr"), "0", "stored with the attestation's counter")
        XCTAssertEqual(try env.redisCLI("HGET", appRecord, "app"), E2EEnvironment.appId)
        XCTAssertEqual(try env.redisCLI("HGET", appRecord, "env"), "development")
        XCTAssertEqual(try env.redisCLI("HGET", appRecord, "bk"), "", "an App Attest key, not a device key")
        XCTAssertEqual(try env.redisCLI("HEXISTS", appRecord, "rcpt"), "1", "the receipt is kept, as /attest keeps it")

        // Later: another device key (a re-registration), vouched for by an assertion of that App Attest key.
        let vouched = try env.registerVouched(by: appKey, counter: 1).reply
        XCTAssertEqual(vouched.status, 201, "\(vouched)")
        XCTAssertEqual(vouched.json["tier"] as? String, "attested")
        XCTAssertEqual(vouched.json["platformTokenSpent"] as? Bool, false)

        // The App Attest key signs protected requests; a replay and an old counter are refused.
        let request = try env.signedRequest(appKey, target: "/v1/attested/x", body: Array("{}".utf8), counter: 2)
        let accepted = try env.send(request)
        XCTAssertEqual(accepted.status, 200, "\(accepted)")
        XCTAssertEqual(accepted.echo?.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(accepted.echo?.values("App-Attest-Key-Id"), [appKey.keyId])
        assertChallengeRefusal(try env.send(request), code: "challenge_unknown", notBefore: nowSeconds)
        assertRefusal(try env.send(try env.signedRequest(appKey, target: "/v1/attested/x", body: Array("{}".utf8), counter: 2)),
                      status: 401, code: "counter_replay")

        // Another attestation of the same App Attest key registers a third device key but never resets
        // the held record: its counter stays, so counter 1 is still a replay.
        let reattested = try env.registerAttested(by: appKey).reply
        XCTAssertEqual(reattested.status, 201, "\(reattested)")
        XCTAssertEqual(try env.redisCLI("HGET", appRecord, "ctr"), "2", "the held counter did not go back")
        assertRefusal(try env.send(try env.signedRequest(appKey, target: "/v1/attested/x", body: Array("{}".utf8), counter: 1)),
                      status: 401, code: "counter_replay")
        XCTAssertEqual(try env.send(try env.signedRequest(appKey, target: "/v1/attested/x", body: Array("{}".utf8), counter: 3)).status,
                       200)
    }

    /// Probe: a revoked App Attest key attested again through `/register`'s attestation form registered
    /// a new device key at tier `attested` (the assertion form and `/attest` already refused it). A
    /// revoked key vouches for nothing: `403 registration_refused` (the attestation was spent), and
    /// the device key is not registered.
    func testARevokedAppAttestKeyVouchesForNothingInTheAttestationForm() throws {
        let appKey = try XCTUnwrap(try env.makeDevice(.ref) as? RefDevice)
        let (first, registered) = try env.registerAttested(by: appKey)
        XCTAssertEqual(registered.status, 201, "\(registered)")
        XCTAssertEqual(try env.redisCLI("HSET", "aa:{\(base64URL(appKey.keyId))}:key", "status", "revoked"), "0")

        let (second, refused) = try env.registerAttested(by: appKey)
        XCTAssertEqual(refused.status, 403, "\(refused)")
        XCTAssertEqual(refused.json["error"] as? String, "registration_refused")
        XCTAssertEqual(try env.redisCLI("EXISTS", "aa:{\(base64URL(second.kid))}:key"), "0", "the device key is not registered")
        XCTAssertEqual(try env.redisCLI("EXISTS", "aa:{\(base64URL(first.kid))}:key"), "1",
                       "failing variant: the first, vouched by the live key, is")
    }

    /// With keys per account, a device registered through the attestation form counts once, by its
    /// device key; the App Attest key that vouched belongs to no account. Before, it took a slot, and
    /// with `max_keys_per_account: 1` it was revoked at once, so the re-registration through it
    /// answered `403 key_revoked` (deny) where the SDK needs it to pass.
    func testTheVouchingKeyTakesNoAccountSlot() throws {
        let accounts = try DeviceKeyEnvironment(maxKeysPerAccount: 1)
        defer { accounts.stop() }
        let appKey = try XCTUnwrap(try accounts.makeDevice(.ref) as? RefDevice)
        let (first, registered) = try accounts.registerAttested(by: appKey, account: "alice")
        XCTAssertEqual(registered.status, 201, "\(registered)")
        let appRecord = "aa:{\(base64URL(appKey.keyId))}:key"
        XCTAssertEqual(try accounts.redisCLI("HGET", appRecord, "status"), "active", "not revoked by the account's limit")
        XCTAssertEqual(try accounts.redisCLI("HGET", "aa:{\(base64URL(first.kid))}:key", "status"), "active")

        // The device key's registration is renewed by a new device key, vouched for by the App Attest key.
        let vouched = try accounts.registerVouched(by: appKey, counter: 1, account: "alice").reply
        XCTAssertEqual(vouched.status, 201, "\(vouched)")
        XCTAssertEqual(vouched.json["tier"] as? String, "attested")
        XCTAssertEqual(try accounts.redisCLI("HGET", "aa:{\(base64URL(first.kid))}:key", "status"), "revoked",
                       "one key per account: the new device key replaced the first")
        XCTAssertEqual(try accounts.redisCLI("HGET", appRecord, "status"), "active")
    }

    /// With `registration_ttl`, the App Attest key of the attestation form gets the registration's
    /// expiry and renews through `/renew` with an assertion, as a key from `/attest` does (the SDK
    /// renews it with the device key, `AttestClient.renewVouchingKey`): renewed, it still vouches after
    /// the first expiry; the failing variant, a key not renewed, answers `401 key_expired`.
    func testTheVouchingKeyRenewsThroughRenewAndVouchesAfterTheFirstExpiry() throws {
        let ttl = try DeviceKeyEnvironment(registrationTTL: "1h")
        defer { ttl.stop() }
        let renewing = try XCTUnwrap(try ttl.makeDevice(.ref) as? RefDevice)
        let lapsing = try XCTUnwrap(try ttl.makeDevice(.ref) as? RefDevice)
        for appKey in [renewing, lapsing] {
            let registered = try ttl.registerAttested(by: appKey).reply
            XCTAssertEqual(registered.status, 201, "\(registered)")
        }
        ttl.clock.advance(seconds: 2400)
        let challenge = try ttl.challenge(kid: renewing.keyId, purpose: "renew")
        let clientData = LifecycleGateway.clientData("renew-v1", challenge: Array(Data(base64Encoded: challenge)!),
                                                     keyId: Array(Data(base64Encoded: renewing.keyId)!))
        let body = try JSONSerialization.data(withJSONObject: [
            "keyId": renewing.keyId, "challenge": challenge,
            "assertion": try renewing.rawAssertion(clientData: clientData, counter: 1)])
        let renewed = try ttl.send("POST", "/app-attest/v1/renew", headers: [("Content-Type", "application/json")], body: Array(body))
        XCTAssertEqual(renewed.status, 200, "\(renewed)")
        XCTAssertEqual((renewed.json["expiresAt"] as? NSNumber)?.doubleValue ?? 0, Double(ttl.clock.now() / 1000 + 3600), accuracy: 2,
                       "moved to the renewal's time + TTL")

        ttl.clock.advance(seconds: 1800)  // past the registrations' first expiry
        let vouched = try ttl.registerVouched(by: renewing, counter: 2).reply
        XCTAssertEqual(vouched.status, 201, "\(vouched)")
        XCTAssertEqual(vouched.json["tier"] as? String, "attested")
        let lapsed = try ttl.registerVouched(by: lapsing, counter: 1).reply
        XCTAssertEqual(lapsed.status, 401, "\(lapsed)")
        XCTAssertEqual(lapsed.json["error"] as? String, "key_expired")
    }

    /// The App Attest key's write reaches Redis but its reply is lost with the connection (a proxy cuts
    /// it): the registration still answers `201` at tier `attested`, the failure is counted as
    /// `store_errors_total{command="register_vouching_key"}` (not `register_key`), the record Redis
    /// holds is the one written (read back, never written twice), and the key vouches later.
    func testAVouchingWriteWhoseReplyIsLostIsReadBackAndTheKeyVouchesLater() throws {
        let lossy = try DeviceKeyEnvironment(replyDroppingProxy: true)
        defer { lossy.stop() }
        let proxy = try XCTUnwrap(lossy.proxy)
        let appKey = try XCTUnwrap(try lossy.makeDevice(.ref) as? RefDevice)
        let appRecord = "aa:{\(base64URL(appKey.keyId))}:key"
        // The vouching write is the one EVALSHA naming the App Attest key's record.
        try proxy.loseReply(toChunkHolding: ["EVALSHA", appRecord])
        let (deviceKey, registered) = try lossy.registerAttested(by: appKey)
        XCTAssertEqual(registered.status, 201, "\(registered)")
        XCTAssertEqual(registered.json["tier"] as? String, "attested")
        XCTAssertEqual(proxy.cuts, ["cut EVALSHA"], "the reply of the vouching write was lost")
        XCTAssertEqual(try lossy.redisCLI("HGET", appRecord, "status"), "active")
        XCTAssertEqual(try lossy.redisCLI("HGET", appRecord, "ctr"), "0")
        XCTAssertEqual(try lossy.redisCLI("HGET", "aa:{\(base64URL(deviceKey.kid))}:key", "status"), "active")
        let metrics = try Curl.get("http://127.0.0.1:\(lossy.gateway.adminPort)/metrics").text
        let vouchingErrors = metrics.split(separator: "\n").filter {
            $0.hasPrefix("attest_gateway_store_errors_total{") && $0.contains("command=\"register_vouching_key\"")
        }
        XCTAssertEqual(vouchingErrors.count, 1, metrics)
        XCTAssertFalse(metrics.contains("attest_gateway_store_errors_total{command=\"register_key\""), metrics)

        let vouched = try lossy.registerVouched(by: appKey, counter: 1).reply
        XCTAssertEqual(vouched.status, 201, "\(vouched)")
        XCTAssertEqual(vouched.json["tier"] as? String, "attested")
    }

    func testIntegrityPolicyLowersOrRefuses() throws {
        // integrity_lower: jb_files -> tier device even with an attestation.
        let key = try env.makeKey()
        let appKey = try env.makeDevice(.ref)
        let challenge = try env.challenge(kid: key.kid)
        let data = DeviceKeyEnvironment.clientData(challenge: challenge, point: key.point, backing: "software", integrity: ["jb_files"])
        let attestation = try appKey.attestation(challenge: Data(data).base64EncodedString(), appId: E2EEnvironment.appId,
                                                 environment: "development", caDirectory: appKey.caDirectory)
        let lowered = try env.register(try env.registrationFields(key, challenge: challenge, integrity: ["jb_files"],
                                                                  appAttest: ["keyId": appKey.keyId, "attestation": attestation]))
        XCTAssertEqual(lowered.status, 201, "\(lowered)")
        XCTAssertEqual(lowered.json["tier"] as? String, "device")
        XCTAssertEqual(lowered.json["platformAttested"] as? Bool, true)
        // The App Attest key of a registration whose tier was lowered is not stored (probe: it was, at
        // tier attested, and signed `min_tier: attested` routes and vouched again at `attested`).
        XCTAssertEqual(try env.redisCLI("EXISTS", "aa:{\(base64URL(appKey.keyId))}:key"), "0", "no attested key left behind")
        let signed = try env.signed(key, target: "/v1/device/x")
        let forwarded = try env.send("POST", "/v1/device/x", headers: signed.headers, body: Array("{}".utf8))
        XCTAssertEqual(forwarded.status, 200, "\(forwarded)")
        XCTAssertEqual(forwarded.echo?.values("App-Attest-Integrity"), ["jb_files"])
        XCTAssertEqual(forwarded.echo?.values("App-Attest-Tier"), ["device"])

        // integrity_refuse: debugger -> 403 registration_refused; no retryAt without a spent attestation.
        let refusedKey = try env.makeKey()
        let refusedChallenge = try env.challenge(kid: refusedKey.kid)
        let refused = try env.register(try env.registrationFields(refusedKey, challenge: refusedChallenge, integrity: ["debugger"]))
        assertRefusal(refused, status: 403, code: "registration_refused", action: "deny")
        XCTAssertNil(refused.json["retryAt"], "\(refused)")
        XCTAssertEqual(try env.redisKeys(kid: refusedKey.kid).count, 1, "the challenge pending, nothing else")
        XCTAssertEqual(try env.register(try env.registrationFields(refusedKey, challenge: refusedChallenge, integrity: ["jb_scheme"])).status,
                       201, "without the refused code")

        // integrity_refuse on a registration that spent an attestation: retryAt.
        let spentKey = try env.makeKey()
        let spentChallenge = try env.challenge(kid: spentKey.kid)
        let spentData = DeviceKeyEnvironment.clientData(challenge: spentChallenge, point: spentKey.point, backing: "software",
                                                        integrity: ["debugger"])
        let spent = try appKey.attestation(challenge: Data(spentData).base64EncodedString(), appId: E2EEnvironment.appId,
                                           environment: "development", caDirectory: appKey.caDirectory)
        let refusedSpent = try env.register(try env.registrationFields(spentKey, challenge: spentChallenge, integrity: ["debugger"],
                                                                       appAttest: ["keyId": appKey.keyId, "attestation": spent]))
        assertRefusal(refusedSpent, status: 403, code: "registration_refused", action: "retry")
        XCTAssertEqual(((refusedSpent.json["retryAt"] as? NSNumber)?.int64Value ?? 0) - nowSeconds, 3600, accuracy: 2, "\(refusedSpent)")
    }

    // MARK: - Requests signed by a device key

    func testSignedRequestOnADeviceRouteIsForwardedOnceWithTierHeaders() throws {
        let key = try env.registeredKey(integrity: ["jb_scheme", "simulator"])
        let signed = try env.signed(key, target: "/v1/device/pay")
        let reply = try env.send("POST", "/v1/device/pay", headers: signed.headers, body: Array("{}".utf8))
        XCTAssertEqual(reply.status, 200, "\(reply)")
        let echo = try XCTUnwrap(reply.echo)
        XCTAssertEqual(echo.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(echo.values("App-Attest-Tier"), ["device"])
        XCTAssertEqual(echo.values("App-Attest-Platform-Attested"), ["false"])
        XCTAssertEqual(echo.values("App-Attest-Integrity"), ["jb_scheme,simulator"])
        XCTAssertEqual(echo.values("App-Attest-Signature"), [], "evidence is stripped")

        // Replay: the challenge was consumed.
        let replay = try env.send("POST", "/v1/device/pay", headers: signed.headers, body: Array("{}".utf8))
        assertChallengeRefusal(replay, code: "challenge_unknown", notBefore: nowSeconds)
        // Another body than the one signed.
        let other = try env.signed(key, target: "/v1/device/pay")
        assertRefusal(try env.send("POST", "/v1/device/pay", headers: other.headers, body: Array("{\"x\":1}".utf8)), status: 401,
                      code: "bad_signature")
        XCTAssertEqual(try env.send("POST", "/v1/device/pay", headers: other.headers, body: Array("{}".utf8)).status, 200,
                       "the refused request left the challenge pending")

        // Over HTTP/2 (h2c), the same rules.
        let h2 = try env.signed(key, target: "/v1/device/h2")
        let overH2 = try env.send("POST", "/v1/device/h2", headers: h2.headers, body: Array("{}".utf8), via: .h2c)
        XCTAssertEqual(overH2.status, 200, "\(overH2)")
        XCTAssertEqual(overH2.echo?.values("App-Attest-Tier"), ["device"])
        assertChallengeRefusal(try env.send("POST", "/v1/device/h2", headers: h2.headers, body: Array("{}".utf8), via: .h2c),
                               code: "challenge_unknown", notBefore: nowSeconds)
    }

    func testSignedRequestWithAChallengeOfAnotherPurposeOrKeyOrByARevokedKeyIsRefused() throws {
        let key = try env.registeredKey(), other = try env.registeredKey()
        // An assert challenge of another key.
        let foreign = try env.challenge(kid: other.kid, purpose: "assert")
        let withForeign = try env.signed(key, target: "/v1/device/c", challenge: foreign)
        assertChallengeRefusal(try env.send("POST", "/v1/device/c", headers: withForeign.headers, body: Array("{}".utf8)),
                               code: "challenge_unknown", notBefore: nowSeconds)
        // A register challenge of this key.
        let register = try env.challenge(kid: key.kid, purpose: "register")
        let withRegister = try env.signed(key, target: "/v1/device/c", challenge: register)
        assertChallengeRefusal(try env.send("POST", "/v1/device/c", headers: withRegister.headers, body: Array("{}".utf8)),
                               code: "challenge_wrong_purpose", notBefore: nowSeconds)
        // The other key's challenge is still pending for it.
        let ownForeign = try env.signed(other, target: "/v1/device/c", challenge: foreign)
        XCTAssertEqual(try env.send("POST", "/v1/device/c", headers: ownForeign.headers, body: Array("{}".utf8)).status, 200)

        // A device key sending an assertion header is refused for the kind of evidence.
        let asAssertion = try env.signed(key, target: "/v1/device/c")
        let assertionHeaders = asAssertion.headers.map { $0.0 == "App-Attest-Signature" ? ("App-Attest-Assertion", $0.1) : $0 }
        assertRefusal(try env.send("POST", "/v1/device/c", headers: assertionHeaders, body: Array("{}".utf8)), status: 401,
                      code: "evidence_kind_mismatch")
        XCTAssertEqual(try env.send("POST", "/v1/device/c", headers: asAssertion.headers, body: Array("{}".utf8)).status, 200)

        // Revoked: 403 key_revoked, the challenge kept.
        let pending = try env.signed(key, target: "/v1/device/c")
        let keyId = try KeyID(Array(try XCTUnwrap(Data(base64Encoded: key.kid))))
        let done = DispatchSemaphore(value: 0)
        env.gateway.store.revokeKey(keyId) { _ in done.signal() }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        assertRefusal(try env.send("POST", "/v1/device/c", headers: pending.headers, body: Array("{}".utf8)), status: 403,
                      code: "key_revoked")
        XCTAssertTrue(try env.redisKeys(kid: key.kid).contains("aa:{\(base64URL(key.kid))}:ch:\(base64URL(pending.challenge))"),
                      "the challenge is still pending")
    }

    func testSignatureByAnotherKeyOrOfAnotherKindIsRefused() throws {
        let key = try env.registeredKey()
        let stranger = try env.makeKey()
        let forged = try env.signed(key, target: "/v1/device/a", signer: stranger)
        assertRefusal(try env.send("POST", "/v1/device/a", headers: forged.headers, body: Array("{}".utf8)), status: 401,
                      code: "bad_signature")
        // The same challenge, signed by the key: accepted.
        let genuine = try env.signed(key, target: "/v1/device/a", challenge: forged.challenge)
        XCTAssertEqual(try env.send("POST", "/v1/device/a", headers: genuine.headers, body: Array("{}".utf8)).status, 200)

        // An App Attest key sends assertions, not signatures; both at once are ambiguous.
        let appKey = try env.attestedDevice(.ref)
        let assertChallenge = try env.challenge(kid: appKey.keyId, purpose: "assert")
        let plain = [("App-Attest-Key-Id", appKey.keyId), ("App-Attest-Challenge", assertChallenge),
                     ("App-Attest-Signature", Data(repeating: 1, count: 70).base64EncodedString())]
        assertRefusal(try env.send("POST", "/v1/attested/a", headers: plain, body: Array("{}".utf8)), status: 401,
                      code: "evidence_kind_mismatch")
        let request = try env.signedRequest(appKey, target: "/v1/attested/a", body: Array("{}".utf8), counter: 1, challenge: assertChallenge)
        assertRefusal(try env.send(request, extraHeaders: [("App-Attest-Signature", "AAAA")]), status: 400, code: "evidence_ambiguous")
        let answer = try env.send(request)
        XCTAssertEqual(answer.status, 200, "\(answer)")
        XCTAssertEqual(answer.echo?.values("App-Attest-Tier"), ["attested"], "App Attest keys are tier attested")
        XCTAssertEqual(answer.echo?.values("App-Attest-Platform-Attested"), ["true"])
    }

    func testDeviceKeyOnAnAttestedRouteIsTierTooLowAndMonitorRecordsIt() throws {
        let key = try env.registeredKey()
        let signed = try env.signed(key, target: "/v1/attested/a")
        let refused = try env.send("POST", "/v1/attested/a", headers: signed.headers, body: Array("{}".utf8))
        assertRefusal(refused, status: 403, code: "tier_too_low", action: "deny")
        // Nothing consumed: the same challenge serves a request on the device route.
        let moved = try env.signed(key, target: "/v1/device/a", challenge: signed.challenge)
        XCTAssertEqual(try env.send("POST", "/v1/device/a", headers: moved.headers, body: Array("{}".utf8)).status, 200)

        // Monitor: forwarded with the tier and the reason.
        let monitored = try env.signed(key, target: "/v1/monitored/a")
        let reply = try env.send("POST", "/v1/monitored/a", headers: monitored.headers, body: Array("{}".utf8))
        XCTAssertEqual(reply.status, 200, "\(reply)")
        XCTAssertEqual(reply.echo?.values("App-Attest-Verdict"), ["valid"])
        XCTAssertEqual(reply.echo?.values("App-Attest-Reason"), ["tier_too_low"])
        XCTAssertEqual(reply.echo?.values("App-Attest-Tier"), ["device"])
    }

    func testMalformedBodiesAre400() throws {
        let key = try env.makeKey()
        let challenge = try env.challenge(kid: key.kid)
        var fields = try env.registrationFields(key, challenge: challenge)
        fields["integrity"] = "jb_files"
        assertRefusal(try env.register(fields), status: 400, code: "json_invalid")
        fields["integrity"] = []
        fields["publicKey"] = "not base64!"
        assertRefusal(try env.register(fields), status: 400, code: "encoding_invalid")
        fields = try env.registrationFields(key, challenge: challenge, appAttest: ["keyId": "AAAA", "attestation": "AAAA"])
        assertRefusal(try env.register(fields), status: 400, code: "key_id_invalid")
        fields = try env.registrationFields(key, challenge: challenge)
        fields.removeValue(forKey: "signature")
        assertRefusal(try env.register(fields), status: 400, code: "json_invalid")
        // A name repeated inside the nested appAttest object: refused as a whole (JSONSerialization
        // would keep the last copy), not read as a bad keyId.
        let valid = String(decoding: try JSONSerialization.data(withJSONObject: try env.registrationFields(key, challenge: challenge)), as: UTF8.self)
        let nested = #"{"appAttest":{"keyId":"AAAA","keyId":"AAAA","attestation":"AAAA"},"# + valid.dropFirst()
        assertRefusal(try env.send("POST", "/app-attest/v1/register", headers: [("Content-Type", "application/json")], body: Array(nested.utf8)),
                      status: 400, code: "json_invalid")
        XCTAssertEqual(try env.register(try env.registrationFields(key, challenge: challenge)).status, 201)
    }
}

/// `attestctl simulate --device-key` and `--ios-unsupported` against the real gateway.
final class DeviceKeySimulateTests: XCTestCase {
    func testSimulateDeviceKeyAndIOSUnsupportedFlowsPass() throws {
        let env = try DeviceKeyEnvironment()
        defer { env.stop() }
        let attestctl = try BuiltProducts.executable("attestctl")
        let gateway = "http://127.0.0.1:\(env.port)"
        for flag in ["--device-key", "--ios-unsupported"] {
            let run = try ChildProcess.run(attestctl, ["simulate", flag, "--gateway", gateway, "--app-id", E2EEnvironment.appId,
                                                       "--route", "/v1/device", "--requests", "2", "--integrity", "jb_scheme"])
            XCTAssertEqual(run.status, 0, run.output)
            XCTAssertTrue(run.output.contains("summary: PASS - registration 201 tier device, signed requests 2/2 accepted, replay 401 refused (challenge_unknown)"),
                          run.output)
            XCTAssertTrue(run.output.contains(flag == "--device-key" ? "backing secure_enclave" : "backing software"), run.output)
        }
        // attestctl keys show: the device key's fields.
        let listed = try ChildProcess.run(attestctl, ["keys", "list", "--store", env.redis.url])
        XCTAssertEqual(listed.status, 0, listed.output)
        let records = listed.output.split(separator: "\n").compactMap {
            (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any]
        }.filter { $0["keyId"] != nil }
        XCTAssertEqual(Set(records.compactMap { $0["backing"] as? String }), ["secure_enclave", "software"], listed.output)
        XCTAssertTrue(records.allSatisfy { $0["trustTier"] as? String == "device" && $0["platformAttested"] as? Bool == false
                                           && $0["integrity"] as? [String] == ["jb_scheme"] }, listed.output)
        // On an attested route the device key is refused: the flow fails.
        let refused = try ChildProcess.run(attestctl, ["simulate", "--device-key", "--gateway", gateway, "--app-id", E2EEnvironment.appId,
                                                       "--route", "/v1/attested", "--requests", "1"])
        XCTAssertEqual(refused.status, 1, refused.output)
        XCTAssertTrue(refused.output.contains("tier_too_low"), refused.output)
        XCTAssertTrue(refused.output.contains("summary: FAIL"), refused.output)
        // Usage errors.
        XCTAssertEqual(try ChildProcess.run(attestctl, ["simulate", "--device-key", "--ios-unsupported", "--gateway", gateway,
                                                        "--app-id", E2EEnvironment.appId]).status, 2)
        XCTAssertEqual(try ChildProcess.run(attestctl, ["simulate", "--device-key", "--gateway", gateway, "--app-id", E2EEnvironment.appId,
                                                        "--integrity", "Bad/Code"]).status, 2)
    }
}

/// A store outage during registration and device-signed requests is a 503, never an acceptance.
final class DeviceKeyStoreOutageTests: XCTestCase {
    func testRegistrationAndSignedRequestsAre503WhileRedisIsDown() throws {
        let env = try DeviceKeyEnvironment()
        defer { env.stop() }
        let key = try env.registeredKey()
        let pending = try env.signed(key, target: "/v1/device/x")
        let newKey = try env.makeKey()
        let fields = try env.registrationFields(newKey, challenge: try env.challenge(kid: newKey.kid))
        env.redis.stop()
        assertRefusal(try env.send("POST", "/v1/device/x", headers: pending.headers, body: Array("{}".utf8)), status: 503,
                      code: "store_unavailable", action: "retry")
        assertRefusal(try env.register(fields), status: 503, code: "store_unavailable", action: "retry")
        try env.redis.start()
        // Every loop's connection back (`/readyz` says so), as in StoreOutageTests: until then a request
        // on a loop whose connection is still waiting to reconnect is rightly a 503.
        XCTAssertTrue(eventually { StoreOutageTests.storeIsOK(admin: "http://127.0.0.1:\(env.gateway.adminPort)") },
                      "the store is reported ok once every loop's connection is back")
        var registered: HTTPReply?
        XCTAssertTrue(try eventually { registered = try env.register(fields); return registered?.status != 503 }, "Redis back")
        XCTAssertEqual(registered?.status, 201, "the challenge survived the outage: \(String(describing: registered))")
        XCTAssertEqual(try env.send("POST", "/v1/device/x", headers: pending.headers, body: Array("{}".utf8)).status, 200)
    }
}
