import Foundation

/// This install's **device key** (DESIGN.md section 8): P-256, in the Secure Enclave where the device
/// has one, else in software. It signs registrations and protected requests.
public protocol DeviceKeySigner: Sendable {
    /// The public key as a 65-byte X9.63 point (`04 || X || Y`); the keyId is its SHA-256.
    var publicKey: Data { get }
    /// `secure_enclave` or `software` (the `backing` field of the registration).
    var backing: String { get }
    /// What `DeviceKeyFactory.restoreKey(_:)` needs to get this key back after a relaunch (a Secure
    /// Enclave key's opaque handle, or a software key's private bytes). Stored by `AttestationStore`.
    var persistentRepresentation: Data { get }
    /// ECDSA P-256 signature, DER-encoded, over `message` hashed with SHA-256.
    /// - Throws: any error of the key's platform (the SDK reports it in `Attestation.detail`).
    func sign(_ message: Data) throws -> Data
}
