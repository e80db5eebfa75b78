import Foundation

/// Creates and restores device keys (`DeviceKeySigner`): `SecureEnclaveKeyFactory` where CryptoKit
/// exists, `SoftwareKeyFactory` on Linux. `AttestClient` serializes calls to `makeKey()`.
public protocol DeviceKeyFactory: Sendable {
    /// A new P-256 key.
    /// - Throws: when no key can be created (the attestation is then `.unsupported`).
    func makeKey() throws -> any DeviceKeySigner
    /// The key whose `persistentRepresentation` is `representation`.
    /// - Throws: when the representation is unusable (the SDK then creates a new key, and the
    ///   registration's `Attestation.detail` says that and this error).
    func restoreKey(_ representation: Data) throws -> any DeviceKeySigner
}
