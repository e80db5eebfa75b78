import Foundation
#if canImport(CryptoKit)
import CryptoKit
#elseif canImport(AttestCrypto)
import AttestCrypto
#endif

/// SHA-256 for the SDK: CryptoKit on Apple platforms, AttestCrypto (OpenSSL) on Linux.
enum SHA256Hashing {
    /// SHA-256 of `bytes` (32 bytes).
    static func hash(_ bytes: Data) -> Data {
        #if canImport(CryptoKit)
        return Data(CryptoKit.SHA256.hash(data: bytes))
        #else
        return Data(AttestCrypto.SHA256.hash(Array(bytes)))
        #endif
    }
}
