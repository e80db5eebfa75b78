internal import COpenSSL

/// An error from the AttestCrypto layer.
///
/// Every failure of libcrypto is turned into one of these values; the thread's OpenSSL error queue
/// is drained (and its text kept in `openSSL`) so that no stale error leaks into later calls.
public enum CryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Input bytes are not a valid encoding of the expected object (key, certificate, PEM, ...).
    case invalidEncoding(String)
    /// A key has the wrong type or curve, or its point is not on the curve.
    case invalidKey(String)
    /// An argument is outside its documented range (wrong length, empty name, ...).
    case invalidArgument(String)
    /// libcrypto reported an error; `function` is the OpenSSL call, `detail` the error-queue text.
    case openSSL(function: String, detail: String)

    public var description: String {
        switch self {
        case .invalidEncoding(let s): return "invalid encoding: \(s)"
        case .invalidKey(let s): return "invalid key: \(s)"
        case .invalidArgument(let s): return "invalid argument: \(s)"
        case .openSSL(let f, let d): return "\(f) failed: \(d)"
        }
    }

    /// Drains the calling thread's OpenSSL error queue into one line of text.
    static func drainErrorQueue() -> String {
        var parts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buffer = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buffer, buffer.count)
            if parts.count < 8 { parts.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)) }
        }
        return parts.isEmpty ? "no detail" : parts.joined(separator: "; ")
    }

    /// An `.openSSL` error for `function`, with the drained error queue as detail.
    static func openSSLFailure(_ function: String) -> CryptoError {
        .openSSL(function: function, detail: drainErrorQueue())
    }
}
