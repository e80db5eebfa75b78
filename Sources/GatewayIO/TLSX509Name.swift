// Printing X.509 names for messages.

internal import COpenSSL

/// X.509 distinguished names as text, for error messages and `TLSConnection.peerCertificateSubject`.
enum TLSX509Name {
    /// `name` as an RFC 2253 string, e.g. "CN=api.example.com,O=Example" (X509_NAME_print_ex(3) with
    /// XN_FLAG_RFC2253); "?" when it cannot be printed.
    static func rfc2253(_ name: OpaquePointer?) -> String {
        guard let name, let bio = BIO_new(BIO_s_mem()) else { return "?" }
        defer { BIO_free(bio) }
        guard X509_NAME_print_ex(bio, name, 0, cshim_XN_FLAG_RFC2253()) >= 0 else { return "?" }
        var data: UnsafeMutablePointer<CChar>? = nil
        let length = cshim_BIO_get_mem_data(bio, &data)
        guard length > 0, let data else { return "empty name" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}
