import Foundation

/// App Attest under Apple's rules (DESIGN.md section 9): one key per install, attested once; a key
/// Apple calls invalid is examined before it is replaced; `serverUnavailable` is retried with the same
/// key and clientDataHash; other errors discard the key.
extension AttestClient {
    /// What App Attest contributed to one registration.
    struct PlatformEvidence {
        /// `{"keyId", "attestation"}` or `{"keyId", "assertion"}` for the request, nil when none.
        var json: [String: String]?
        /// Whether an attestation was spent.
        var spent: Bool
        /// Why there is none, when there is none.
        var note: String?
    }

    func loadAppAttestKey() -> StoredAppAttestKey? {
        store.data(for: Item.appAttestKey).flatMap { try? JSONDecoder().decode(StoredAppAttestKey.self, from: $0) }
    }

    func saveAppAttestKey(_ key: StoredAppAttestKey?) {
        // Removal goes through the same store item (the same account-scoped Keychain query) that saved it.
        try? store.set(key.flatMap { try? JSONEncoder().encode($0) }, for: Item.appAttestKey)
    }

    /// Calls `body`, retrying `serverUnavailable` `appAttestRetries` times with the same arguments.
    func withAppleRetries<T>(_ body: () throws -> T) -> Result<T, AppAttestServiceError> {
        var attempt = 0
        while true {
            do { return .success(try body()) } catch {
                let code = error as? AppAttestServiceError ?? .unknownSystemFailure
                guard code == .serverUnavailable, attempt < configuration.appAttestRetries else { return .failure(code) }
                clock.sleep(seconds: configuration.appAttestRetryDelay * pow(2, Double(attempt)))
                attempt += 1
            }
        }
    }

    /// The stored App Attest key, or a new one (serialized: callers hold `operation`).
    func appAttestKey() -> Result<StoredAppAttestKey, AppAttestServiceError> {
        if let stored = loadAppAttestKey() { return .success(stored) }
        switch withAppleRetries({ try appAttest.generateKey() }) {
        case .failure(let code): return .failure(code)
        case .success(let keyId):
            let key = StoredAppAttestKey(keyId: keyId, attested: false)
            saveAppAttestKey(key)
            return .success(key)
        }
    }

    /// App Attest evidence over `clientDataHash`: an attestation for a key Apple has not attested, an
    /// assertion for one it has (unless `attestationOnly`, for gateways that must see an attestation).
    func platformEvidence(clientDataHash: Data, attestationOnly: Bool = false) -> PlatformEvidence {
        guard appAttest.isSupported else { return PlatformEvidence(json: nil, spent: false, note: "App Attest is not supported on this device") }
        for _ in 0..<2 {  // at most one replacement of a key
            let key: StoredAppAttestKey
            switch appAttestKey() {
            case .success(let found): key = found
            case .failure(.featureUnsupported): return PlatformEvidence(json: nil, spent: false, note: "App Attest is not supported (featureUnsupported)")
            case .failure(let code): return PlatformEvidence(json: nil, spent: false, note: "App Attest could not create a key (\(code))")
            }
            if key.attested {
                if attestationOnly { saveAppAttestKey(nil); continue }
                switch withAppleRetries({ try appAttest.generateAssertion(key.keyId, clientDataHash: clientDataHash) }) {
                case .success(let assertion):
                    return PlatformEvidence(json: ["keyId": key.keyId, "assertion": Base64Text.encode(assertion)], spent: false, note: nil)
                case .failure(.serverUnavailable):
                    return PlatformEvidence(json: nil, spent: false, note: "App Attest did not answer in time (serverUnavailable)")
                case .failure(.featureUnsupported):
                    return PlatformEvidence(json: nil, spent: false, note: "App Attest is not supported (featureUnsupported)")
                case .failure:
                    // invalidKey on an attested key: Apple rejects it now (e.g. restored on another device). Replace it.
                    saveAppAttestKey(nil)
                    continue
                }
            }
            switch withAppleRetries({ try appAttest.attestKey(key.keyId, clientDataHash: clientDataHash) }) {
            case .success(let attestation):
                saveAppAttestKey(StoredAppAttestKey(keyId: key.keyId, attested: true))
                return PlatformEvidence(json: ["keyId": key.keyId, "attestation": Base64Text.encode(attestation)], spent: true, note: nil)
            case .failure(.serverUnavailable):
                // Kept: the next attempt uses the same key.
                return PlatformEvidence(json: nil, spent: false, note: "App Attest did not answer in time (serverUnavailable)")
            case .failure(.featureUnsupported):
                return PlatformEvidence(json: nil, spent: false, note: "App Attest is not supported (featureUnsupported)")
            case .failure(.invalidKey):
                // Attested already (our record of it was lost), or rejected / never attestable: an assertion tells.
                switch withAppleRetries({ try appAttest.generateAssertion(key.keyId, clientDataHash: clientDataHash) }) {
                case .success(let assertion) where !attestationOnly:
                    saveAppAttestKey(StoredAppAttestKey(keyId: key.keyId, attested: true))
                    return PlatformEvidence(json: ["keyId": key.keyId, "assertion": Base64Text.encode(assertion)], spent: false, note: nil)
                case .failure(.serverUnavailable):
                    return PlatformEvidence(json: nil, spent: false, note: "App Attest did not answer in time (serverUnavailable)")
                default:
                    saveAppAttestKey(nil)
                    continue
                }
            case .failure(let code):
                // invalidInput, unknownSystemFailure: discard the key; a new one next time.
                saveAppAttestKey(nil)
                return PlatformEvidence(json: nil, spent: false, note: "App Attest failed (\(code)); the key was discarded")
            }
        }
        return PlatformEvidence(json: nil, spent: false, note: "App Attest rejected its keys (invalidKey)")
    }
}
