// Reading PEM certificate chains and private keys from files, with errors naming the file.

internal import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Reads the PEM files of a TLS certificate (RFC 7468 textual encoding): a chain file (leaf first,
/// then intermediates) and a private key file. Shared by `TLSServerContext` (which refuses what
/// fails here) and `TLSCertificateCheck` (which reports it), so both apply the same rules.
enum TLSPEMFile {
    /// Largest file read (1 MiB): certificate chains and keys are a few KiB.
    static let maxFileSize = 1 << 20

    /// The whole file, or `TLSContextError.unreadableFile` with the system's reason.
    static func read(_ path: String) throws(TLSContextError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .unreadableFile(path: path, reason: String(cString: strerror(errno))) }
        guard (info.st_mode & S_IFMT) == S_IFREG else { throw .unreadableFile(path: path, reason: "not a regular file") }
        guard Int(info.st_size) <= maxFileSize else {
            throw .unreadableFile(path: path, reason: "larger than \(maxFileSize) bytes")
        }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 16_384)
        while true {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                throw .unreadableFile(path: path, reason: String(cString: strerror(errno)))
            }
            bytes.append(contentsOf: chunk[0..<n])
            guard bytes.count <= maxFileSize else {
                throw .unreadableFile(path: path, reason: "larger than \(maxFileSize) bytes")
            }
        }
        return bytes
    }

    /// Whether `bytes` contain a PEM encapsulation boundary (`-----BEGIN `).
    static func looksLikePEM(_ bytes: [UInt8]) -> Bool { contains(bytes, "-----BEGIN ") }

    /// The certificates of a chain file, in file order (other PEM blocks are skipped).
    /// - Throws: `.unreadableFile`, `.notPEM` (no PEM block, or a CERTIFICATE block that does not
    ///   decode, with OpenSSL's reason), `.noCertificate`.
    static func certificates(_ path: String) throws(TLSContextError) -> [TLSHandle] {
        let bytes = try read(path)
        guard looksLikePEM(bytes) else { throw .notPEM(path: path, reason: "no -----BEGIN line") }
        ERR_clear_error()
        var certificates: [TLSHandle] = []
        let failure: String? = bytes.withUnsafeBytes { raw -> String? in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else {
                return TLSOpenSSLErrors.drain(or: "BIO_new_mem_buf failed")
            }
            defer { BIO_free(bio) }
            while true {
                guard let x509 = PEM_read_bio_X509(bio, nil, nil, nil) else {
                    // The end of the file shows as "no start line"; anything else is a broken block.
                    let code = ERR_peek_last_error()
                    if ERR_GET_LIB(code) == ERR_LIB_PEM && ERR_GET_REASON(code) == PEM_R_NO_START_LINE {
                        ERR_clear_error()
                        return nil
                    }
                    return TLSOpenSSLErrors.drain(or: "PEM_read_bio_X509 failed")
                }
                certificates.append(.x509(x509))
            }
        }
        if let failure { throw .notPEM(path: path, reason: failure) }
        guard !certificates.isEmpty else { throw .noCertificate(path: path) }
        return certificates
    }

    /// The private key of a key file (PKCS #8 `PRIVATE KEY`, `EC PRIVATE KEY` or `RSA PRIVATE KEY`;
    /// `EC PARAMETERS` blocks are skipped). Encrypted keys are refused: there is no passphrase source
    /// (and OpenSSL's default would prompt on the terminal).
    /// - Throws: `.unreadableFile`, `.notPEM`, `.invalidKey`, `.unsupportedKey` (see `keyProblem`).
    static func privateKey(_ path: String) throws(TLSContextError) -> TLSHandle {
        let bytes = try read(path)
        guard looksLikePEM(bytes) else { throw .notPEM(path: path, reason: "no -----BEGIN line") }
        if contains(bytes, "ENCRYPTED") {
            throw .invalidKey(path: path, reason: "the key is encrypted; store it unencrypted with file permissions 0600")
        }
        ERR_clear_error()
        let key: OpaquePointer? = bytes.withUnsafeBytes { raw in
            guard let bio = BIO_new_mem_buf(raw.baseAddress, Int32(raw.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, TLSPEMFile.noPassphrase, nil)
        }
        guard let key else {
            throw .invalidKey(path: path, reason: TLSOpenSSLErrors.drain(or: "no PRIVATE KEY block"))
        }
        let owned = TLSHandle.key(key)
        if let problem = keyProblem(key) { throw .unsupportedKey(path: path, reason: problem) }
        return owned
    }

    /// Why `key` is not accepted for a TLS server certificate, or nil when it is: P-256 ECDSA
    /// (`prime256v1`), or RSA (`rsaEncryption`) of at least 2048 bits (DESIGN.md section 5).
    static func keyProblem(_ key: OpaquePointer) -> String? {
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA:
            let bits = EVP_PKEY_get_bits(key)
            return bits >= 2048 ? nil : "RSA key of \(bits) bits (at least 2048 needed)"
        case EVP_PKEY_EC:
            var name = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else {
                ERR_clear_error()
                return "EC key without a named curve (P-256 needed)"
            }
            let curve = name.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            return curve == "prime256v1" || curve == "P-256" ? nil : "EC key on curve \(curve) (P-256 needed)"
        default:
            let type = EVP_PKEY_get0_type_name(key).map { String(cString: $0) } ?? "unknown"
            return "\(type) key (P-256 ECDSA or RSA needed)"
        }
    }

    /// A passphrase callback that supplies none (pem_password_cb, PEM_read_bio_PrivateKey(3)).
    static let noPassphrase: @convention(c) (UnsafeMutablePointer<CChar>?, Int32, Int32, UnsafeMutableRawPointer?) -> Int32 = { _, _, _, _ in -1 }

    private static func contains(_ bytes: [UInt8], _ needle: StaticString) -> Bool {
        let n = UnsafeBufferPointer(start: needle.utf8Start, count: needle.utf8CodeUnitCount)
        guard bytes.count >= n.count else { return false }
        var i = 0
        while i + n.count <= bytes.count {
            if bytes[i] == n[0] {
                var j = 1
                while j < n.count && bytes[i + j] == n[j] { j += 1 }
                if j == n.count { return true }
            }
            i += 1
        }
        return false
    }
}
