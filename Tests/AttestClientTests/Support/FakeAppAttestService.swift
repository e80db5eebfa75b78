import AttestClient
import AttestCrypto
import Foundation

/// A scripted App Attest service: `attestKey` answers `attestation|<keyId>|<hash b64>`, `generateAssertion`
/// `assertion|<keyId>|<hash b64>`; errors queued per call kind come first. Apple's rules: a key is
/// attested once (then `invalidKey`), unknown keys are `invalidKey`. Every call is recorded.
final class FakeAppAttestService: AppAttestService, @unchecked Sendable {  // all state guarded by `lock`
    enum Call: Equatable { case generateKey, attestKey(String, Data), generateAssertion(String, Data) }

    private let lock = NSLock()
    var supported = true
    private var keys: Set<String> = []
    private var attestedKeys: Set<String> = []
    private var calls: [Call] = []
    var generateErrors: [AppAttestServiceError] = []
    var attestErrors: [AppAttestServiceError] = []
    var assertionErrors: [AppAttestServiceError] = []

    var isSupported: Bool { lock.withLock { supported } }

    func generateKey() throws -> String {
        try lock.withLock {
            calls.append(.generateKey)
            if !generateErrors.isEmpty { throw generateErrors.removeFirst() }
            let keyId = Data(AttestCrypto.SHA256.hash(Array(UUID().uuidString.utf8))).base64EncodedString()
            keys.insert(keyId)
            return keyId
        }
    }

    func attestKey(_ keyId: String, clientDataHash: Data) throws -> Data {
        try lock.withLock {
            calls.append(.attestKey(keyId, clientDataHash))
            if !attestErrors.isEmpty { throw attestErrors.removeFirst() }
            guard keys.contains(keyId), !attestedKeys.contains(keyId) else { throw AppAttestServiceError.invalidKey }
            attestedKeys.insert(keyId)
            return Data("attestation|\(keyId)|\(clientDataHash.base64EncodedString())".utf8)
        }
    }

    func generateAssertion(_ keyId: String, clientDataHash: Data) throws -> Data {
        try lock.withLock {
            calls.append(.generateAssertion(keyId, clientDataHash))
            if !assertionErrors.isEmpty { throw assertionErrors.removeFirst() }
            guard attestedKeys.contains(keyId) else { throw AppAttestServiceError.invalidKey }
            return Data("assertion|\(keyId)|\(clientDataHash.base64EncodedString())".utf8)
        }
    }

    /// Marks `keyId` as attested by Apple without a call (a record the app lost).
    func markAttested(_ keyId: String) { lock.withLock { _ = attestedKeys.insert(keyId) } }
    var recorded: [Call] { lock.withLock { calls } }
    var generated: Int { recorded.filter { $0 == .generateKey }.count }
}
