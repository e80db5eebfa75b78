#if canImport(DeviceCheck) && canImport(CryptoKit)
import CryptoKit
import Foundation

/// Device keys in the Secure Enclave (`backing` `secure_enclave`) where the device has one
/// (`SecureEnclave.isAvailable`), else software keys (`SoftwareKeyFactory`). A Secure Enclave key's
/// `persistentRepresentation` is CryptoKit's opaque `dataRepresentation`: it only works on this device.
public struct SecureEnclaveKeyFactory: DeviceKeyFactory {
    /// Creates one.
    public init() {}

    /// A new key in the Secure Enclave, or in software when there is none.
    /// - Throws: CryptoKit's error.
    public func makeKey() throws -> any DeviceKeySigner {
        guard SecureEnclave.isAvailable else { return try SoftwareKeyFactory().makeKey() }
        return SecureEnclaveKey(key: try SecureEnclave.P256.Signing.PrivateKey())
    }

    /// A Secure Enclave key from its `dataRepresentation`, else a software key from its raw bytes.
    /// - Throws: when neither reading works.
    public func restoreKey(_ representation: Data) throws -> any DeviceKeySigner {
        if SecureEnclave.isAvailable, let key = try? SecureEnclave.P256.Signing.PrivateKey(dataRepresentation: representation) {
            return SecureEnclaveKey(key: key)
        }
        return try SoftwareKeyFactory().restoreKey(representation)
    }
}

/// A device key held by the Secure Enclave.
struct SecureEnclaveKey: DeviceKeySigner, @unchecked Sendable {  // CryptoKit keys are immutable values
    let key: SecureEnclave.P256.Signing.PrivateKey
    var publicKey: Data { key.publicKey.x963Representation }
    var backing: String { "secure_enclave" }
    var persistentRepresentation: Data { key.dataRepresentation }
    func sign(_ message: Data) throws -> Data { try key.signature(for: message).derRepresentation }
}
#endif
