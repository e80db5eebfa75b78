internal import COpenSSL
#if canImport(Glibc)
import Glibc
#endif

/// A parsed X.509 certificate (RFC 5280) backed by an OpenSSL `X509`.
///
/// All descriptive fields (names, validity, serial, key point, extensions) are read once at parse
/// time, so reading them never touches OpenSSL. **Thread-safe**: immutable after init; OpenSSL 3
/// caches extension data inside `X509` under its own lock when a chain is verified.
public final class X509Certificate: @unchecked Sendable {  // immutable; X509's internal cache uses OpenSSL's per-object lock
    let x509: OpaquePointer

    /// The certificate's DER encoding, exactly as parsed.
    public let derBytes: [UInt8]
    /// Subject RDN attributes in encoding order, as (short name, UTF-8 value), e.g. ("CN", "Apple ...").
    public let subjectAttributes: [NameAttribute]
    /// Issuer RDN attributes in encoding order.
    public let issuerAttributes: [NameAttribute]
    /// DER of the subject Name.
    public let subjectDER: [UInt8]
    /// DER of the issuer Name.
    public let issuerDER: [UInt8]
    /// The serial number as big-endian magnitude bytes (no sign byte).
    public let serialNumber: [UInt8]
    /// notBefore, seconds since 1970-01-01T00:00:00Z.
    public let notBefore: Int64
    /// notAfter, seconds since 1970-01-01T00:00:00Z.
    public let notAfter: Int64
    /// The curve of the subject key, or nil when it is not an EC key on P-256 or P-384.
    public let publicKeyCurve: ECCurve?
    /// The subject key's uncompressed point `04 || X || Y` (65 bytes on P-256, 97 on P-384), or nil.
    public let publicKeyPoint: [UInt8]?
    /// All extensions in certificate order.
    public let extensions: [X509Extension]

    /// Parses exactly one DER certificate; bytes after it are an error.
    /// - Throws: `CryptoError.invalidEncoding`.
    public init(der: [UInt8]) throws {
        guard !der.isEmpty, der.count < Int(Int32.max) else { throw CryptoError.invalidEncoding("empty certificate") }
        let parsed: OpaquePointer = try der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let cert = d2i_X509(nil, &cursor, buffer.count) else {
                ERR_clear_error()
                throw CryptoError.invalidEncoding("not a DER X.509 certificate")
            }
            guard let cursor, cursor == buffer.baseAddress! + buffer.count else {
                X509_free(cert)
                throw CryptoError.invalidEncoding("bytes after the certificate")
            }
            return cert
        }
        x509 = parsed
        derBytes = der
        subjectAttributes = X509Certificate.attributes(X509_get_subject_name(parsed))
        issuerAttributes = X509Certificate.attributes(X509_get_issuer_name(parsed))
        subjectDER = X509Certificate.nameDER(X509_get_subject_name(parsed))
        issuerDER = X509Certificate.nameDER(X509_get_issuer_name(parsed))
        serialNumber = X509Certificate.serial(parsed)
        notBefore = X509Certificate.seconds(X509_get0_notBefore(parsed))
        notAfter = X509Certificate.seconds(X509_get0_notAfter(parsed))
        var curve: ECCurve? = nil
        var point: [UInt8]? = nil
        if let key = X509_get0_pubkey(parsed), let c = ECKeyMaterial.curve(of: key) {
            curve = c
            point = try? ECKeyMaterial.uncompressedPoint(of: key, curve: c)
        }
        ERR_clear_error()
        publicKeyCurve = curve
        publicKeyPoint = point
        extensions = X509Certificate.readExtensions(parsed)
    }

    /// Parses a PEM text holding exactly one `CERTIFICATE` block.
    public convenience init(pem: String) throws {
        try self.init(der: PEM.decode(pem, label: "CERTIFICATE"))
    }

    /// Parses every `CERTIFICATE` block of a PEM text, in order.
    public static func parseAll(pem: String) throws -> [X509Certificate] {
        try PEM.decodeAll(pem, label: "CERTIFICATE").map { try X509Certificate(der: $0) }
    }

    deinit { X509_free(x509) }

    /// The subject as an RFC 4514 string (last RDN first), e.g. "C=US,O=Apple Inc.,CN=...".
    public var subject: String { NameAttribute.rfc4514(subjectAttributes) }
    /// The issuer as an RFC 4514 string.
    public var issuer: String { NameAttribute.rfc4514(issuerAttributes) }
    /// The first subject commonName, if any.
    public var subjectCommonName: String? { subjectAttributes.first { $0.type == "CN" }?.value }
    /// The certificate in PEM.
    public var pem: String { PEM.encode(derBytes, label: "CERTIFICATE") }
    /// SHA-256 of the DER encoding (the usual certificate fingerprint).
    public var sha256Fingerprint: [UInt8] { SHA256.hash(derBytes) }

    /// The value of the extension with `oid`, or nil when absent.
    /// - Throws: `CryptoError.invalidEncoding` when the extension occurs more than once (RFC 5280
    ///   section 4.2 forbids it; a verifier must not pick one).
    public func extensionValue(oid: String) throws -> [UInt8]? {
        let matches = extensions.filter { $0.oid == oid }
        guard matches.count <= 1 else { throw CryptoError.invalidEncoding("extension \(oid) occurs \(matches.count) times") }
        return matches.first?.value
    }

    /// The subject key as a `P256PublicKey`.
    /// - Throws: `CryptoError.invalidKey` when the key is not on P-256.
    public func publicKeyP256() throws -> P256PublicKey {
        guard publicKeyCurve == .p256, let point = publicKeyPoint else { throw CryptoError.invalidKey("certificate key is not P-256") }
        return try P256PublicKey(x963: point)
    }

    // MARK: - reading helpers

    private static func attributes(_ name: OpaquePointer?) -> [NameAttribute] {
        guard let name else { return [] }
        var out: [NameAttribute] = []
        for index in 0..<max(0, X509_NAME_entry_count(name)) {
            guard let entry = X509_NAME_get_entry(name, index) else { continue }
            let nid = OBJ_obj2nid(X509_NAME_ENTRY_get_object(entry))
            var type: String
            if nid != NID_undef, let sn = OBJ_nid2sn(nid) {
                type = String(cString: sn)
            } else {
                type = objectText(X509_NAME_ENTRY_get_object(entry))
            }
            var utf8: UnsafeMutablePointer<UInt8>? = nil
            let length = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(entry))
            var value = ""
            if length >= 0, let utf8 {
                value = String(decoding: UnsafeBufferPointer(start: utf8, count: Int(length)), as: UTF8.self)
                cshim_OPENSSL_free(utf8)
            } else {
                ERR_clear_error()
            }
            if type == "emailAddress" { type = "E" }
            out.append(NameAttribute(type, value))
        }
        return out
    }

    private static func nameDER(_ name: OpaquePointer?) -> [UInt8] {
        guard let name else { return [] }
        let length = i2d_X509_NAME(name, nil)
        guard length > 0 else { ERR_clear_error(); return [] }
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = i2d_X509_NAME(name, &cursor)
        }
        return out
    }

    private static func serial(_ cert: OpaquePointer) -> [UInt8] {
        guard let serial = X509_get0_serialNumber(cert) else { return [] }
        let length = Int(ASN1_STRING_length(serial))
        guard length > 0, let data = ASN1_STRING_get0_data(serial) else { return [] }
        return Array(UnsafeBufferPointer(start: data, count: length))
    }

    /// Seconds since the epoch of an ASN1_TIME (UTCTime or GeneralizedTime, always UTC in X.509).
    static func seconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64 {
        guard let time else { return 0 }
        var parts = tm()
        guard ASN1_TIME_to_tm(time, &parts) == 1 else { ERR_clear_error(); return 0 }
        return CivilTime.secondsSinceEpoch(year: Int(parts.tm_year) + 1900, month: Int(parts.tm_mon) + 1,
                                           day: Int(parts.tm_mday), hour: Int(parts.tm_hour),
                                           minute: Int(parts.tm_min), second: Int(parts.tm_sec))
    }

    static func objectText(_ object: OpaquePointer?) -> String {
        var buffer = [CChar](repeating: 0, count: 128)
        let length = OBJ_obj2txt(&buffer, Int32(buffer.count), object, 1)
        guard length > 0, Int(length) < buffer.count else { return "" }
        return String(decoding: buffer.prefix(Int(length)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func readExtensions(_ cert: OpaquePointer) -> [X509Extension] {
        var out: [X509Extension] = []
        for index in 0..<max(0, X509_get_ext_count(cert)) {
            guard let ext = X509_get_ext(cert, index) else { continue }
            let oid = objectText(X509_EXTENSION_get_object(ext))
            let critical = X509_EXTENSION_get_critical(ext) == 1
            var value: [UInt8] = []
            if let data = X509_EXTENSION_get_data(ext) {
                let length = Int(ASN1_STRING_length(data))
                if length > 0, let bytes = ASN1_STRING_get0_data(data) {
                    value = Array(UnsafeBufferPointer(start: bytes, count: length))
                }
            }
            out.append(X509Extension(oid: oid, isCritical: critical, value: value))
        }
        return out
    }
}
