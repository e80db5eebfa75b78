import COpenSSL

/// An AES cipher context and an HMAC context, as OpenSSL hands them to the ticket key callback.
final class EVPContexts {
    let cipher: OpaquePointer
    let mac: OpaquePointer
    private let macAlgorithm: OpaquePointer

    init() {
        cipher = EVP_CIPHER_CTX_new()!
        macAlgorithm = EVP_MAC_fetch(nil, "HMAC", nil)!
        mac = EVP_MAC_CTX_new(macAlgorithm)!
    }

    deinit {
        EVP_CIPHER_CTX_free(cipher)
        EVP_MAC_CTX_free(mac)
        EVP_MAC_free(macAlgorithm)
    }
}
