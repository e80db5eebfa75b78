// Why a TLS context (or its certificate files) could not be built.

/// A TLS context could not be built from its settings: which file, and OpenSSL's reason
/// (ERR_error_string_n(3)) or the system's (`strerror`).
///
/// Thrown by `TLSServerContext.init` / `reload(_:)` and `TLSClientContext.init`; never on the
/// per-connection path. `description` reads like `tls/api.key: private key does not match the
/// certificate in tls/api.pem (error:05800074:x509 certificate routines::key values mismatch)`.
package enum TLSContextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be opened or read (missing, permissions, a directory, larger than 1 MiB).
    case unreadableFile(path: String, reason: String)
    /// The file holds no PEM block (`-----BEGIN ...-----`), or a PEM block does not decode.
    case notPEM(path: String, reason: String)
    /// The chain file is PEM but holds no `CERTIFICATE` block.
    case noCertificate(path: String)
    /// The key file holds no usable private key (none, encrypted, or undecodable).
    case invalidKey(path: String, reason: String)
    /// The private key is neither P-256 ECDSA nor RSA of at least 2048 bits.
    case unsupportedKey(path: String, reason: String)
    /// The private key is not the leaf certificate's (SSL_CTX_check_private_key(3)).
    case keyMismatch(chainPath: String, keyPath: String, reason: String)
    /// A setting is out of range (no certificates, an ALPN name of 0 or more than 255 bytes, ...).
    case invalidSettings(String)
    /// An OpenSSL call failed for another reason (out of memory, unknown cipher string, ...).
    case openSSL(call: String, reason: String)

    /// One line naming the file and the reason.
    package var description: String {
        switch self {
        case .unreadableFile(let path, let reason): return "\(path): cannot read: \(reason)"
        case .notPEM(let path, let reason): return "\(path): not PEM: \(reason)"
        case .noCertificate(let path): return "\(path): no CERTIFICATE block"
        case .invalidKey(let path, let reason): return "\(path): no usable private key: \(reason)"
        case .unsupportedKey(let path, let reason): return "\(path): unsupported private key: \(reason)"
        case .keyMismatch(let chainPath, let keyPath, let reason):
            return "\(keyPath): private key does not match the certificate in \(chainPath) (\(reason))"
        case .invalidSettings(let reason): return "invalid TLS settings: \(reason)"
        case .openSSL(let call, let reason): return "\(call) failed: \(reason)"
        }
    }
}
