/// C strings with static storage for OpenSSL calls that keep the pointer they are given
/// (e.g. `EVP_PKEY_CTX_new_from_name` stores the key type name by reference).
enum StaticCString {
    /// "EC".
    static let ec: StaticString = "EC"

    /// A `const char *` to immortal storage.
    static func pointer(_ s: StaticString) -> UnsafePointer<CChar> {
        UnsafeRawPointer(s.utf8Start).assumingMemoryBound(to: CChar.self)
    }
}
