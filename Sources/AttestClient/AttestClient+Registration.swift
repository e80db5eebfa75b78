import Foundation

/// Registration (DESIGN.md section 8), renewal, forgetting, and App Attest alone for gateways without
/// registrations. Callers hold `operation`.
extension AttestClient {
    typealias Outcome = (Attestation, StoredRegistration?)

    /// The refused-registration back-off, when one is running at `now` (a stored one more than seven
    /// days ahead is stored again as seven days from now).
    func activeBackoff(now: Double) -> RegistrationBackoff? {
        guard let data = store.data(for: Item.backoff), let stored = try? JSONDecoder().decode(RegistrationBackoff.self, from: data) else { return nil }
        let backoff = stored.bounded(now: now)
        if backoff != stored, let fixed = try? JSONEncoder().encode(backoff) { try? store.set(fixed, for: Item.backoff) }
        return backoff.until > now ? backoff : nil
    }

    func backoffDetail(_ backoff: RegistrationBackoff) -> String {
        "\(backoff.refusals) registration attempt(s) in a row spent an App Attest attestation without a lasting registration; no new attempt until \(backoff.untilText)"
    }

    /// Counts one more attempt that spent an App Attest attestation and did not end in a lasting
    /// registration (refused, failed, unanswered, or told to re-attest soon after): the back-off grows,
    /// persisted. `retryAt` is the gateway's, when it gave one.
    func extendBackoff(retryAt: Double? = nil) -> RegistrationBackoff {
        let previous = store.data(for: Item.backoff).flatMap { try? JSONDecoder().decode(RegistrationBackoff.self, from: $0) }
        let backoff = (previous ?? RegistrationBackoff(refusals: 0, until: 0)).refused(now: clock.now(), retryAt: retryAt)
        if let data = try? JSONEncoder().encode(backoff) { try? store.set(data, for: Item.backoff) }
        return backoff
    }

    /// Why the store cannot be read (an item that may exist cannot be read: the Keychain before the
    /// first unlock), nil when it can: then nothing is generated and no attestation spent, since a key,
    /// a registration or a back-off may be there unseen.
    func unreadableStore() -> String? {
        for item in [Item.deviceKey, Item.appAttestKey, Item.registration, Item.backoff] {
            do { _ = try store.read(item) } catch {
                return "the SDK's store cannot be read (\(item): \(error)); nothing generated or spent: try again once the device is unlocked"
            }
        }
        return nil
    }

    /// The device key in memory or restored from the store; nil when there is none or the stored one
    /// cannot be restored (`restoredDeviceKey()` says why).
    func existingDeviceKey() -> (any DeviceKeySigner)? {
        if case .restored(let key) = restoredDeviceKey() { return key }
        return nil
    }

    /// The device key in memory or restored from the store, none stored, or a stored representation
    /// that `keys.restoreKey` refuses (another device's Secure Enclave key, from a file store restored
    /// from a backup) or that restores to something other than an uncompressed P-256 public key
    /// (65 bytes).
    func restoredDeviceKey() -> StoredDeviceKey {
        if let key = lock.locked({ deviceKey }) { return .restored(key) }
        guard let data = store.data(for: Item.deviceKey) else { return .none }
        let key: any DeviceKeySigner
        do { key = try keys.restoreKey(data) } catch { return .unusable("\(error)") }
        guard key.publicKey.count == 65 else { return .unusable("its public key is \(key.publicKey.count) bytes, not 65") }
        lock.locked { deviceKey = key }
        return .restored(key)
    }

    /// The device key (restored, or created and stored), with a note when a stored key that could not
    /// be restored was replaced. Only under `operation`: key generation is serialized.
    /// - Failure: `.cannotCreate` (the factory threw), or `.cannotStore` (the new key could not be
    ///   written: registering it would leave a registration whose key is gone at the next launch, so
    ///   nothing is registered and no attestation spent).
    func loadOrCreateDeviceKey() -> Result<(key: any DeviceKeySigner, note: String?), DeviceKeyProblem> {
        var unrestorable: String?  // why the stored key could not be restored, when one could not
        switch restoredDeviceKey() {
        case .restored(let key): return .success((key, nil))
        case .none: break
        case .unusable(let why): unrestorable = why
        }
        let key: any DeviceKeySigner
        do { key = try keys.makeKey() } catch { return .failure(.cannotCreate(error)) }
        do { try store.set(key.persistentRepresentation, for: Item.deviceKey) } catch {
            return .failure(.cannotStore("the new device key could not be stored (\(error)); nothing registered or spent" +
                                         (unrestorable.map { "; the stored one could not be restored (\($0))" } ?? "")))
        }
        lock.locked { deviceKey = key }
        return .success((key, unrestorable.map { "the stored device key could not be restored (\($0)): a new key replaced it" }))
    }

    /// A full registration for the configured mode.
    func register(replacing previous: StoredRegistration?) -> Outcome {
        if let problem = unreadableStore() { return (.failed(problem), nil) }
        if configuration.mode == .appAttestOnly { return attestAppAttestOnly(replacing: previous) }
        let now = clock.now()
        if let backoff = activeBackoff(now: now) { return (.failed(backoffDetail(backoff)), nil) }
        let signer: any DeviceKeySigner, keyNote: String?
        switch loadOrCreateDeviceKey() {
        case .success(let made): (signer, keyNote) = made
        case .failure(.cannotStore(let detail)): return (.failed(detail), nil)
        case .failure(.cannotCreate(let error)):
            if configuration.mode == .automatic && appAttest.isSupported { return attestAppAttestOnly(replacing: previous) }
            return (.unsupported("no device key could be created: \(error)"), nil)
        }
        /// `detail`, followed by why the stored device key was replaced when it was.
        func noted(_ detail: String) -> String { keyNote.map { detail + "; " + $0 } ?? detail }
        let kid = Base64Text.encode(SHA256Hashing.hash(signer.publicKey))
        var roundTrips = 0
        var challenge: Data
        switch requestChallenge(kid: kid, purpose: "register", roundTrips: &roundTrips) {
        case .challenge(let bytes): challenge = bytes
        case .unavailable(let detail): return (.failed(noted(detail), backing: signer.backing), nil)
        case .refused(let answer):
            if configuration.mode == .automatic && answer.status == 400 && appAttest.isSupported {
                // A gateway without registrations does not know the purpose "register": App Attest alone.
                return attestAppAttestOnly(replacing: previous)
            }
            return (.failed(noted(answer.describe("no registration challenge")), backing: signer.backing), nil)
        }
        var spentAny = false
        var replacedAppAttestKey = false
        /// A failed attempt; one that spent an attestation extends the back-off.
        func failed(_ detail: String, retryAt: Double? = nil) -> Outcome {
            guard spentAny else { return (.failed(noted(detail), backing: signer.backing), nil) }
            return (.failed(noted(detail) + "; " + backoffDetail(extendBackoff(retryAt: retryAt)), tokenSpent: true, backing: signer.backing), nil)
        }
        for _ in 0..<3 {
            let integrity = configuration.integrityCodes()
            let clientData = ClientDataFraming.registration(challenge: challenge, publicKey: signer.publicKey, backing: signer.backing,
                                                            integrity: integrity)
            let evidence = platformEvidence(clientDataHash: SHA256Hashing.hash(clientData))
            spentAny = spentAny || evidence.spent
            let signature: Data
            do { signature = try signer.sign(clientData) } catch {
                return failed("the device key cannot sign: \(error)")
            }
            var body: [String: Any] = ["publicKey": Base64Text.encode(signer.publicKey), "challenge": Base64Text.encode(challenge),
                                       "signature": Base64Text.encode(signature), "backing": signer.backing, "integrity": integrity]
            if let json = evidence.json { body["appAttest"] = json }
            if let appId = configuration.appId { body["appId"] = appId }
            let answer: GatewayAnswer
            switch postEndpoint("/register", body, kid: kid, resendOnServerError: true, roundTrips: &roundTrips) {
            case .unavailable(let detail): return failed(detail)
            case .answer(let got): answer = got
            }
            if (200..<300).contains(answer.status) {
                // Only the documented answer passes: 201 {"kid", "tier", "platformAttested", ...}. A captive
                // portal's 200 page, or an answer without those fields, is a failed exchange: nothing assumed.
                guard answer.status == 201, let gatewayKid = answer.string("kid"), let tier = answer.string("tier"),
                      let platformAttested = answer.bool("platformAttested") else {
                    return failed("malformed registration answer: HTTP \(answer.status) without the documented 201 {kid, tier, platformAttested}")
                }
                // The kid is the SDK's own spelling (standard base64 of SHA-256 of the public key): the
                // gateway's may use another alphabet, but must name the same 32 bytes.
                guard Base64Text.decode(gatewayKid) == SHA256Hashing.hash(signer.publicKey) else {
                    return failed("malformed registration answer: the gateway's kid \(gatewayKid) names another key than \(kid)")
                }
                let expiresAt: Int?, renewAfter: Int?
                do { (expiresAt, renewAfter) = (try answer.seconds("expiresAt"), try answer.seconds("renewAfter")) } catch {
                    return failed("malformed registration answer: \(error)")
                }
                let notes = [evidence.json == nil ? evidence.note : nil, keyNote].compactMap { $0 }
                let attestation = Attestation(
                    supported: true, verdict: .passed, platformAttested: platformAttested,
                    platformTokenSpent: spentAny || (answer.bool("platformTokenSpent") ?? false),
                    expiresAt: expiresAt, kid: kid,
                    tier: tier, integrity: answer.integrity,
                    backing: answer.string("backing") ?? signer.backing,
                    detail: notes.isEmpty ? nil : notes.joined(separator: "; "), renewAfter: renewAfter)
                if evidence.spent, var accepted = loadAppAttestKey() {
                    accepted.acceptedAt = clock.now()
                    saveAppAttestKey(accepted)
                }
                return (attestation, StoredRegistration(attestation: attestation, signing: .device, appAttestKeyId: nil))
            }
            if spentAny {  // refused, whatever the action: no second attestation in this call
                return failed(answer.describe("registration refused"), retryAt: answer.number("retryAt"))
            }
            if answer.action == "refresh_challenge", let fresh = answer.challenge {
                challenge = fresh.bytes  // the refusal's fresh challenge, at once
                continue
            }
            if answer.action == "reattest", evidence.json?["assertion"] != nil, !replacedAppAttestKey,
               let acceptedAt = loadAppAttestKey()?.acceptedAt, clock.now() - acceptedAt < RegistrationBackoff.first {
                // The gateway accepted this key's attestation within the hour and now disowns it: a new key
                // would spend attestations in a loop.
                return (.failed(noted(answer.describe("registration refused")) + "; " + backoffDetail(extendBackoff()), backing: signer.backing), nil)
            }
            if answer.action == "reattest", evidence.json?["assertion"] != nil, !replacedAppAttestKey {
                // The gateway does not know (or no longer accepts) the App Attest key: replace it, attest the new one.
                saveAppAttestKey(nil)
                replacedAppAttestKey = true
                guard case .challenge(let bytes) = requestChallenge(kid: kid, purpose: "register", roundTrips: &roundTrips) else {
                    return failed(answer.describe("registration refused"))
                }
                challenge = bytes
                continue
            }
            return failed(answer.describe("registration refused"))
        }
        return failed("registration refused: the gateway kept refusing the challenge")
    }

    /// The proof field of `/renew` and `/forget` for `registration` over the lifecycle client data
    /// (`label`, challenge, keyId): `signature` by the device key, or `assertion` by the App Attest key.
    /// nil when the key cannot prove (it is gone or App Attest refuses).
    func lifecycleProof(_ registration: StoredRegistration, label: String, challenge: Data) -> (name: String, value: String)? {
        guard let kid = registration.attestation.kid, let keyId = Base64Text.decode(kid) else { return nil }
        let clientData = ClientDataFraming.lifecycle(label, challenge: challenge, keyId: keyId)
        switch registration.signing {
        case .device:
            guard let signer = existingDeviceKey(), SHA256Hashing.hash(signer.publicKey) == keyId,
                  let signature = try? signer.sign(clientData) else { return nil }
            return ("signature", Base64Text.encode(signature))
        case .appAttest:
            guard case .success(let assertion) = withAppleRetries({
                try appAttest.generateAssertion(registration.appAttestKeyId ?? kid, clientDataHash: SHA256Hashing.hash(clientData))
            }) else { return nil }
            return ("assertion", Base64Text.encode(assertion))
        }
    }

    /// Renewal of `previous`: `POST {prefix}/renew` `{"keyId", "challenge", "signature"|"assertion"}`
    /// (DESIGN.md section 8); a full registration when there is nothing to renew, the gateway has no
    /// renewal (the `renew` purpose or the endpoint unknown), or it asks to re-attest. A device-key
    /// registration made without App Attest registers again where App Attest exists, to carry the token.
    func renew(_ previous: StoredRegistration?) -> Outcome {
        guard let previous, let kid = previous.attestation.kid,
              previous.signing == .appAttest || previous.attestation.platformAttested || !appAttest.isSupported else {
            return register(replacing: previous)
        }
        let backing = previous.attestation.backing
        var roundTrips = 0
        let challenge: Data
        switch requestChallenge(kid: kid, purpose: "renew", roundTrips: &roundTrips) {
        case .challenge(let bytes): challenge = bytes
        case .unavailable(let detail): return (.failed(detail, backing: backing), nil)
        case .refused: return register(replacing: previous)  // no renewal on this gateway, or the key is gone
        }
        guard let proof = lifecycleProof(previous, label: "renew-v1", challenge: challenge) else { return register(replacing: previous) }
        switch postEndpoint("/renew", ["keyId": kid, "challenge": Base64Text.encode(challenge), proof.name: proof.value],
                            kid: kid, roundTrips: &roundTrips) {
        case .unavailable(let detail): return (.failed(detail, backing: backing), nil)
        case .answer(let answer):
            guard answer.status == 200 || answer.status == 201 else {
                if answer.status == 404 || answer.action == "reattest" { return register(replacing: previous) }
                return (.failed(answer.describe("renewal refused"), backing: backing), nil)
            }
            var attestation = previous.attestation
            attestation.platformTokenSpent = false
            attestation.detail = nil
            do { (attestation.expiresAt, attestation.renewAfter) = (try answer.seconds("expiresAt"), try answer.seconds("renewAfter")) } catch {
                return (.failed("malformed renewal answer: \(error)", backing: backing), nil)
            }
            if let tier = answer.string("tier") { attestation.tier = tier }
            if let attested = answer.bool("platformAttested") { attestation.platformAttested = attested }
            if let integrity = answer.integrity { attestation.integrity = integrity }
            if previous.signing == .device { renewVouchingKey(roundTrips: &roundTrips) }
            return (attestation, StoredRegistration(attestation: attestation, signing: previous.signing, appAttestKeyId: previous.appAttestKeyId))
        }
    }

    /// After a device key's renewal: the App Attest key that vouched for a registration (its attestation
    /// accepted by `/register`, so the gateway stores it with the registration's expiry) renewed too,
    /// through `/renew` with an assertion over renew-v1, best effort (the answer is not needed: a key
    /// the gateway no longer holds is replaced at the next registration, which it refuses with
    /// `reattest`). Without it the App Attest key lapsed one TTL after the registration while the
    /// device key lived on, and the next re-registration (a revoked or forgotten device key) spent a
    /// new attestation instead of an assertion. Nothing is sent for a key the gateway never accepted.
    func renewVouchingKey(roundTrips: inout Int) {
        guard appAttest.isSupported, let key = loadAppAttestKey(), key.attested, key.acceptedAt != nil, key.unconfirmed != true,
              case .challenge(let challenge) = requestChallenge(kid: key.keyId, purpose: "renew", roundTrips: &roundTrips) else { return }
        let vouching = StoredRegistration(attestation: Attestation(supported: true, verdict: .passed, platformAttested: true, kid: key.keyId,
                                                                   tier: "attested", backing: "app_attest"),
                                          signing: .appAttest, appAttestKeyId: key.keyId)
        guard let proof = lifecycleProof(vouching, label: "renew-v1", challenge: challenge) else { return }
        _ = postEndpoint("/renew", ["keyId": key.keyId, "challenge": Base64Text.encode(challenge), proof.name: proof.value],
                         kid: key.keyId, roundTrips: &roundTrips)
    }

    /// `POST {prefix}/forget` for `registration`, once, answer ignored (best effort: a gateway without
    /// the endpoint, or one that cannot be reached, changes nothing here).
    func tellGatewayToForget(_ registration: StoredRegistration) {
        guard let kid = registration.attestation.kid, let challengeURL = url(configuration.prefix + "/challenge"),
              let challengeBody = try? JSONSerialization.data(withJSONObject: ["keyId": kid, "purpose": "forget"]),
              let answer = try? transport.send(TransportRequest(method: "POST", url: challengeURL, headers: [("Content-Type", "application/json")],
                                                                body: challengeBody, timeout: configuration.requestTimeout)),
              answer.status == 201, let challenge = GatewayAnswer(answer).challenge?.bytes,
              let proof = lifecycleProof(registration, label: "forget-v1", challenge: challenge),
              let forgetURL = url(configuration.prefix + "/forget"),
              let body = try? JSONSerialization.data(withJSONObject: ["keyId": kid, "challenge": Base64Text.encode(challenge), proof.name: proof.value])
        else { return }
        _ = try? transport.send(TransportRequest(method: "POST", url: forgetURL, headers: [("Content-Type", "application/json")], body: body,
                                                 timeout: configuration.requestTimeout))
    }

    /// An App Attest key whose attestation went to `/attest` without a definitive answer: when the
    /// gateway holds it (a `renew` challenge is issued only for a key it holds), renewed through
    /// `/renew` with an assertion, and passed without spending another attestation. nil when not.
    func recoverUnconfirmedKey(_ key: StoredAppAttestKey, roundTrips: inout Int) -> Outcome? {
        guard case .challenge(let challenge) = requestChallenge(kid: key.keyId, purpose: "renew", roundTrips: &roundTrips) else { return nil }
        let provisional = StoredRegistration(attestation: Attestation(supported: true, verdict: .passed, platformAttested: true, kid: key.keyId,
                                                                      tier: "attested", backing: "app_attest"),
                                             signing: .appAttest, appAttestKeyId: key.keyId)
        guard let proof = lifecycleProof(provisional, label: "renew-v1", challenge: challenge),
              case .answer(let answer) = postEndpoint("/renew", ["keyId": key.keyId, "challenge": Base64Text.encode(challenge), proof.name: proof.value],
                                                      kid: key.keyId, roundTrips: &roundTrips),
              answer.status == 200 || answer.status == 201,
              let expiresAt = try? answer.seconds("expiresAt"), let renewAfter = try? answer.seconds("renewAfter") else { return nil }
        saveAppAttestKey(StoredAppAttestKey(keyId: key.keyId, attested: true))
        var attestation = provisional.attestation
        attestation.expiresAt = expiresAt
        attestation.renewAfter = renewAfter
        if let tier = answer.string("tier") { attestation.tier = tier }
        if let integrity = answer.integrity { attestation.integrity = integrity }
        return (attestation, StoredRegistration(attestation: attestation, signing: .appAttest, appAttestKeyId: key.keyId))
    }

    /// App Attest alone (DESIGN.md section 1): a key the gateway attests through `POST {prefix}/attest`;
    /// requests are then signed with App Attest assertions. A key Apple already attested cannot be
    /// attested again, so a renewal takes a new key.
    func attestAppAttestOnly(replacing previous: StoredRegistration?) -> Outcome {
        guard appAttest.isSupported else {
            return (.unsupported("App Attest is not supported on this device and the gateway does not register device keys"), nil)
        }
        if let problem = unreadableStore() { return (.failed(problem), nil) }
        let now = clock.now()
        if let backoff = activeBackoff(now: now) { return (.failed(backoffDetail(backoff)), nil) }
        var roundTrips = 0
        for _ in 0..<2 {
            let key: StoredAppAttestKey
            switch appAttestKey() {
            case .success(let found): key = found
            case .failure(.featureUnsupported): return (.unsupported("App Attest is not supported (featureUnsupported)"), nil)
            case .failure(let code): return (.failed("App Attest could not create a key (\(code))"), nil)
            }
            if key.attested {
                // An attestation whose answer was lost: the gateway may hold the key (no second attestation then).
                if key.unconfirmed == true, let recovered = recoverUnconfirmedKey(key, roundTrips: &roundTrips) { return recovered }
                saveAppAttestKey(nil)  // Apple attests a key once: a new key
                continue
            }
            let challenge: Data
            switch requestChallenge(kid: key.keyId, purpose: "attest", roundTrips: &roundTrips) {
            case .challenge(let bytes): challenge = bytes
            case .unavailable(let detail): return (.failed(detail), nil)
            case .refused(let answer): return (.failed(answer.describe("no attestation challenge")), nil)
            }
            let attestation: Data
            switch withAppleRetries({ try appAttest.attestKey(key.keyId, clientDataHash: SHA256Hashing.hash(challenge)) }) {
            case .success(let object): attestation = object
            case .failure(.serverUnavailable): return (.failed("App Attest did not answer in time (serverUnavailable); the key is kept"), nil)
            case .failure(.featureUnsupported): return (.unsupported("App Attest is not supported (featureUnsupported)"), nil)
            case .failure(.invalidKey):
                // Attested before (our record was lost) or rejected: either way this gateway cannot attest it; replace it.
                saveAppAttestKey(nil)
                continue
            case .failure(let code):
                saveAppAttestKey(nil)
                return (.failed("App Attest failed (\(code)); the key was discarded"), nil)
            }
            saveAppAttestKey(StoredAppAttestKey(keyId: key.keyId, attested: true, unconfirmed: true))
            /// The attestation is spent: any failure from here on extends the back-off.
            func failed(_ detail: String, retryAt: Double? = nil) -> Outcome {
                (.failed(detail + "; " + backoffDetail(extendBackoff(retryAt: retryAt)), tokenSpent: true), nil)
            }
            let body: [String: Any] = ["keyId": key.keyId, "challenge": Base64Text.encode(challenge), "attestation": Base64Text.encode(attestation)]
            // A 5xx is answered by sending the same attestation again (postEndpoint), never by a new key.
            switch postEndpoint("/attest", body, kid: key.keyId, resendOnServerError: true, roundTrips: &roundTrips) {
            case .unavailable(let detail): return failed(detail)
            case .answer(let answer):
                if answer.status < 500 { saveAppAttestKey(StoredAppAttestKey(keyId: key.keyId, attested: true)) }  // a definitive answer
                guard answer.status == 201 || answer.status == 200 else {
                    let code = answer.refusalCode(errorHeader: configuration.errorHeader).map { " (\($0))" } ?? ""
                    return failed(answer.describe("attestation refused" + code), retryAt: answer.number("retryAt"))
                }
                let expiresAt: Int?, renewAfter: Int?
                do { (expiresAt, renewAfter) = (try answer.seconds("expiresAt"), try answer.seconds("renewAfter")) } catch {
                    return failed("malformed attestation answer: \(error)")
                }
                let result = Attestation(supported: true, verdict: .passed, platformAttested: true, platformTokenSpent: true,
                                         expiresAt: expiresAt, kid: key.keyId,
                                         tier: answer.string("tier") ?? "attested", integrity: answer.integrity,
                                         backing: "app_attest", detail: nil, renewAfter: renewAfter)
                return (result, StoredRegistration(attestation: result, signing: .appAttest, appAttestKeyId: key.keyId))
            }
        }
        return (.failed("App Attest rejected its keys (invalidKey)"), nil)
    }
}
