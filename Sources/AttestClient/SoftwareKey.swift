import Foundation
#if canImport(CryptoKit)
import CryptoKit
#elseif canImport(AttestCrypto)
import AttestCrypto
#endif

/// A software P-256 device key.
struct SoftwareKey: DeviceKeySigner, @unchecked Sendable {  // an immutable key: CryptoKit keys are values, ECPrivateKey is thread-safe
    #if canImport(CryptoKit)
    let key: P256.Signing.PrivateKey
    var publicKey: Data { key.publicKey.x963Representation }
    var persistentRepresentation: Data { key.rawRepresentation }
    func sign(_ message: Data) throws -> Data { try key.signature(for: message).derRepresentation }
    #else
    let key: ECPrivateKey
    var publicKey: Data { Data(key.publicKeyPoint) }
    var persistentRepresentation: Data { (try? Data(key.pkcs8DER())) ?? Data() }
    func sign(_ message: Data) throws -> Data { Data(try key.signature(for: Array(message), digest: .sha256)) }
    #endif
    var backing: String { "software" }
}
