internal import COpenSSL

/// Owns one OpenSSL object and frees it exactly once, in `deinit`.
///
/// Every OpenSSL pointer this module allocates - long-lived or a temporary inside one call - lives in
/// an instance of this class (or in a public final class that frees it in its own `deinit`), so no
/// early return or thrown error can leak it. Use `withPointer` so the owner outlives the C call.
final class OpenSSLHandle {
    private let pointer: OpaquePointer
    private let release: (OpaquePointer) -> Void

    /// Takes ownership of `pointer`; throws `CryptoError.openSSL(function:)` when it is nil.
    init(_ pointer: OpaquePointer?, _ function: String, release: @escaping (OpaquePointer) -> Void) throws {
        guard let pointer else { throw CryptoError.openSSLFailure(function) }
        self.pointer = pointer
        self.release = release
    }

    /// Runs `body` with the raw pointer while this owner is guaranteed alive.
    @inline(__always)
    func withPointer<R>(_ body: (OpaquePointer) throws -> R) rethrows -> R {
        try withExtendedLifetime(self) { try body(pointer) }
    }

    deinit { release(pointer) }
}

extension OpenSSLHandle {
    /// A new memory BIO (optionally reading `bytes`).
    static func memoryBIO() throws -> OpenSSLHandle {
        try OpenSSLHandle(BIO_new(BIO_s_mem()), "BIO_new") { BIO_free($0) }
    }

    /// Everything written to a memory BIO so far.
    static func contents(ofMemoryBIO bio: OpaquePointer) -> [UInt8] {
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = cshim_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { return [] }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            Array(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// Runs `body` with a read-only memory BIO over `bytes` (the BIO does not copy them).
    static func withReadBIO<R>(_ bytes: [UInt8], _ body: (OpaquePointer) throws -> R) throws -> R {
        try bytes.withUnsafeBytes { raw in
            guard raw.count < Int(Int32.max) else { throw CryptoError.invalidArgument("input too large") }
            let bio = try OpenSSLHandle(BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)), "BIO_new_mem_buf") { BIO_free($0) }
            return try bio.withPointer(body)
        }
    }
}
