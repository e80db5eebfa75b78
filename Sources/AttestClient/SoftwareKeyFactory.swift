import Foundation
#if canImport(CryptoKit)
import CryptoKit
#elseif canImport(AttestCrypto)
import AttestCrypto
#endif

/// Device keys in software (`backing` `software`): CryptoKit's `P256.Signing.PrivateKey` on Apple
/// platforms (for devices without a Secure Enclave), AttestCrypto (OpenSSL) on Linux. The private key
/// is stored by the `AttestationStore` (PKCS#8 DER on Linux, raw scalar with CryptoKit).
public struct SoftwareKeyFactory: DeviceKeyFactory {
    /// Creates one.
    public init() {}

    /// A fresh P-256 key.
    /// - Throws: the platform's key generation error.
    public func makeKey() throws -> any DeviceKeySigner {
        #if canImport(CryptoKit)
        return SoftwareKey(key: P256.Signing.PrivateKey())
        #else
        return SoftwareKey(key: try ECPrivateKey(generatingOn: .p256))
        #endif
    }

    /// The key from its `persistentRepresentation`.
    /// - Throws: when the bytes are not a P-256 private key.
    public func restoreKey(_ representation: Data) throws -> any DeviceKeySigner {
        #if canImport(CryptoKit)
        return SoftwareKey(key: try P256.Signing.PrivateKey(rawRepresentation: representation))
        #else
        let key = try ECPrivateKey(pkcs8DER: Array(representation))
        guard key.curve == .p256 else { throw AppAttestServiceError.invalidInput }
        return SoftwareKey(key: key)
        #endif
    }
}
