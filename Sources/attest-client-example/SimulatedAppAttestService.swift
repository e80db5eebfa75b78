import AppAttest
import AttestClient
import AttestCrypto
import AttestSimulator
import Foundation

/// App Attest played by the simulator (AttestSimulator's software devices under a test CA), for Linux
/// where DeviceCheck does not exist. Keys live in memory for the process's life, as Apple's rules have
/// them: a key is attested once (`invalidKey` after that), unknown keys are `invalidKey`.
final class SimulatedAppAttestService: AppAttestService, @unchecked Sendable {  // `devices` and `attested` guarded by `lock`
    let ca: TestCA
    let appId: String
    private let lock = NSLock()
    private var devices: [String: SoftwareDevice] = [:]
    private var attested: Set<String> = []

    init(ca: TestCA, appId: String) {
        self.ca = ca
        self.appId = appId
    }

    var isSupported: Bool { true }

    func generateKey() throws -> String {
        guard let device = try? SoftwareDevice() else { throw AppAttestServiceError.unknownSystemFailure }
        let keyId = Data(device.keyId).base64EncodedString()
        lock.withLock { devices[keyId] = device }
        return keyId
    }

    func attestKey(_ keyId: String, clientDataHash: Data) throws -> Data {
        let device: SoftwareDevice? = lock.withLock {
            guard !attested.contains(keyId), let device = devices[keyId] else { return nil }
            attested.insert(keyId)
            return device
        }
        guard let device else { throw AppAttestServiceError.invalidKey }
        guard clientDataHash.count == 32 else { throw AppAttestServiceError.invalidInput }
        do {
            return Data(try device.mintAttestation(ca: ca, appId: appId, environment: .development, clientDataHash: Array(clientDataHash)).attestationObject)
        } catch {
            throw AppAttestServiceError.unknownSystemFailure
        }
    }

    func generateAssertion(_ keyId: String, clientDataHash: Data) throws -> Data {
        try lock.withLock {
            guard attested.contains(keyId), var device = devices[keyId] else { throw AppAttestServiceError.invalidKey }
            do {
                let minted = try device.mintAssertion(appId: appId, clientDataHash: Array(clientDataHash))
                devices[keyId] = device  // the advanced counter
                return Data(minted.assertionObject)
            } catch {
                throw AppAttestServiceError.unknownSystemFailure
            }
        }
    }
}
