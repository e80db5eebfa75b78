// Reading (and emptying) OpenSSL's per-thread error queue.

internal import COpenSSL

/// OpenSSL's per-thread error queue (ERR_get_error(3), ERR_error_string_n(3)), read so that one
/// call's errors never show up in another connection's result.
enum TLSOpenSSLErrors {
    /// Every queued error as `error:<code>:<library>:<function>:<reason>`, joined with "; ", oldest
    /// first; the queue is empty afterwards. "" when nothing was queued.
    static func drain() -> String {
        var parts: [String] = []
        var buffer = [CChar](repeating: 0, count: 256)
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            ERR_error_string_n(code, &buffer, buffer.count)
            parts.append(buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return parts.joined(separator: "; ")
    }

    /// Empties the queue before an I/O call whose result `SSL_get_error(3)` will classify ("the current
    /// thread's error queue must be empty before the TLS/SSL I/O operation is attempted"). Peeks first:
    /// `ERR_peek_error` is a few dozen instructions where `ERR_clear_error` resets all 16 slots of the
    /// queue (about 430 instructions under callgrind, two calls per proxied TLS request). The queue is
    /// normally empty here, since every failed call drains it (`TLSConnection.outcome`); other OpenSSL
    /// users on the loop's thread (the verifier, certificate checks) may leave something behind.
    @inline(__always)
    static func clearBeforeIO() {
        if ERR_peek_error() != 0 { ERR_clear_error() }
    }

    /// `drain()`, or `fallback` when nothing was queued.
    static func drain(or fallback: String) -> String {
        let text = drain()
        return text.isEmpty ? fallback : text
    }
}
