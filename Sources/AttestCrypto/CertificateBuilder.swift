internal import COpenSSL

/// Builds and signs X.509 v3 certificates (RFC 5280) with ECDSA - the **signing side** used by the
/// software device / simulator and by tests to mint App Attest-shaped chains under a test root.
///
/// Usage:
/// ```
/// var b = CertificateBuilder(subject: [NameAttribute("CN", "Test Root")], issuer: [NameAttribute("CN", "Test Root")],
///                            serialNumber: [1], notBefore: t0, notAfter: t1)
/// b.addBasicConstraints(ca: true, pathLength: nil)
/// b.addKeyUsage([.keyCertSign, .cRLSign])
/// b.addSubjectKeyIdentifier(for: rootKey.publicKeyPoint)
/// let root = try b.sign(subjectPublicKey: rootKey, issuerKey: rootKey, digest: .sha384)
/// ```
/// Extensions are written in the order they were added; each kind may be added once.
public struct CertificateBuilder: Sendable {
    /// Subject name in encoding order.
    public var subject: [NameAttribute]
    /// Issuer name in encoding order (normally the issuer certificate's `subjectAttributes`).
    public var issuer: [NameAttribute]
    /// Serial number, big-endian magnitude (positive; 1 to 20 bytes per RFC 5280).
    public var serialNumber: [UInt8]
    /// notBefore, seconds since the epoch.
    public var notBefore: Int64
    /// notAfter, seconds since the epoch.
    public var notAfter: Int64
    /// Extensions in order.
    public var extensions: [X509Extension] = []

    /// A builder with names, serial and validity; add extensions, then `sign`.
    public init(subject: [NameAttribute], issuer: [NameAttribute], serialNumber: [UInt8], notBefore: Int64, notAfter: Int64) {
        self.subject = subject
        self.issuer = issuer
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// basicConstraints (2.5.29.19): cA and optional pathLenConstraint.
    public mutating func addBasicConstraints(ca: Bool, pathLength: UInt64? = nil, critical: Bool = true) {
        var content: [[UInt8]] = []
        if ca { content.append(DERWriter.boolean(true)) }
        if let pathLength { content.append(DERWriter.integer(pathLength)) }
        addExtension(oid: "2.5.29.19", critical: critical, value: DERWriter.sequence(content))
    }

    /// keyUsage (2.5.29.15).
    public mutating func addKeyUsage(_ usage: KeyUsage, critical: Bool = true) {
        addExtension(oid: "2.5.29.15", critical: critical, value: usage.derValue)
    }

    /// extKeyUsage (2.5.29.37) with the given purpose OIDs (dotted). Invalid OIDs are skipped.
    public mutating func addExtendedKeyUsage(_ oids: [String], critical: Bool = false) {
        addExtension(oid: "2.5.29.37", critical: critical, value: DERWriter.sequence(oids.compactMap { DERWriter.objectIdentifier($0) }))
    }

    /// subjectKeyIdentifier (2.5.29.14) = SHA-1 of the subject public key point (RFC 5280 4.2.1.2 method 1).
    public mutating func addSubjectKeyIdentifier(for publicKeyPoint: [UInt8]) {
        addExtension(oid: "2.5.29.14", critical: false, value: DERWriter.octetString(Self.keyIdentifier(publicKeyPoint)))
    }

    /// authorityKeyIdentifier (2.5.29.35) with keyIdentifier = SHA-1 of the issuer public key point
    /// (matches the issuer's `addSubjectKeyIdentifier`).
    public mutating func addAuthorityKeyIdentifier(issuerPublicKeyPoint: [UInt8]) {
        addExtension(oid: "2.5.29.35", critical: false, value: DERWriter.tlv(0x30, DERWriter.tlv(0x80, Self.keyIdentifier(issuerPublicKeyPoint))))
    }

    /// Any extension by dotted OID with its raw DER value (the bytes inside extnValue).
    public mutating func addExtension(oid: String, critical: Bool, value: [UInt8]) {
        extensions.append(X509Extension(oid: oid, isCritical: critical, value: value))
    }

    /// The 20-byte key identifier SHA-1(public key point) (RFC 5280 section 4.2.1.2, method 1).
    public static func keyIdentifier(_ publicKeyPoint: [UInt8]) -> [UInt8] {
        publicKeyPoint.withUnsafeBytes { MessageDigest.sha1.digest($0) }
    }

    /// Signs the certificate: subject key `subjectPublicKey` (its public half), signed by `issuerKey`
    /// with ECDSA and `digest` (ecdsa-with-SHA256 / -SHA384). Returns the parsed certificate.
    public func sign(subjectPublicKey: ECPrivateKey, issuerKey: ECPrivateKey, digest: DigestAlgorithm) throws -> X509Certificate {
        try sign(subjectKey: subjectPublicKey.pkey, owner: subjectPublicKey, issuerKey: issuerKey, digest: digest)
    }

    /// Same, for a subject of which only the public key is known (P-256).
    public func sign(subjectPublicKey: P256PublicKey, issuerKey: ECPrivateKey, digest: DigestAlgorithm) throws -> X509Certificate {
        try sign(subjectKey: subjectPublicKey.pkey, owner: subjectPublicKey, issuerKey: issuerKey, digest: digest)
    }

    private func sign(subjectKey: OpaquePointer, owner: AnyObject, issuerKey: ECPrivateKey, digest: DigestAlgorithm) throws -> X509Certificate {
        guard !serialNumber.isEmpty, serialNumber.count <= 20 else { throw CryptoError.invalidArgument("serial number must be 1...20 bytes") }
        let cert = try OpenSSLHandle(X509_new(), "X509_new") { X509_free($0) }
        return try withExtendedLifetime(owner) {
            try cert.withPointer { x in
                guard X509_set_version(x, 2) == 1 else { throw CryptoError.openSSLFailure("X509_set_version") }
                try setSerial(x)
                guard ASN1_TIME_set(X509_getm_notBefore(x), time_t(notBefore)) != nil,
                      ASN1_TIME_set(X509_getm_notAfter(x), time_t(notAfter)) != nil else {
                    throw CryptoError.openSSLFailure("ASN1_TIME_set")
                }
                try setName(subject, X509_set_subject_name, x)
                try setName(issuer, X509_set_issuer_name, x)
                guard X509_set_pubkey(x, subjectKey) == 1 else { throw CryptoError.openSSLFailure("X509_set_pubkey") }
                for ext in extensions { try add(ext, to: x) }
                guard X509_sign(x, issuerKey.pkey, digest.messageDigest.md) > 0 else { throw CryptoError.openSSLFailure("X509_sign") }
                let length = i2d_X509(x, nil)
                guard length > 0 else { throw CryptoError.openSSLFailure("i2d_X509") }
                var der = [UInt8](repeating: 0, count: Int(length))
                der.withUnsafeMutableBufferPointer { buffer in
                    var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
                    _ = i2d_X509(x, &cursor)
                }
                return try X509Certificate(der: der)
            }
        }
    }

    private func setSerial(_ x: OpaquePointer) throws {
        let bn = try OpenSSLHandle(serialNumber.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }, "BN_bin2bn") { BN_free($0) }
        try bn.withPointer { b in
            guard let integer = BN_to_ASN1_INTEGER(b, nil) else { throw CryptoError.openSSLFailure("BN_to_ASN1_INTEGER") }
            let owned = try OpenSSLHandle(OpaquePointer(integer), "BN_to_ASN1_INTEGER") { ASN1_INTEGER_free(UnsafeMutablePointer<ASN1_INTEGER>($0)) }
            try owned.withPointer { i in
                guard X509_set_serialNumber(x, UnsafeMutablePointer<ASN1_INTEGER>(i)) == 1 else {
                    throw CryptoError.openSSLFailure("X509_set_serialNumber")
                }
            }
        }
    }

    private func setName(_ attributes: [NameAttribute], _ setter: (OpaquePointer?, OpaquePointer?) -> Int32, _ x: OpaquePointer) throws {
        let name = try OpenSSLHandle(X509_NAME_new(), "X509_NAME_new") { X509_NAME_free($0) }
        try name.withPointer { n in
            for attribute in attributes {
                let rc = attribute.value.withCString { value in
                    value.withMemoryRebound(to: UInt8.self, capacity: attribute.value.utf8.count + 1) {
                        X509_NAME_add_entry_by_txt(n, attribute.type, MBSTRING_UTF8, $0, -1, -1, 0)
                    }
                }
                guard rc == 1 else { throw CryptoError.invalidArgument("name attribute \(attribute.type)=\(attribute.value)") }
            }
            guard setter(x, n) == 1 else { throw CryptoError.openSSLFailure("X509_set_name") }
        }
    }

    private func add(_ ext: X509Extension, to x: OpaquePointer) throws {
        guard let object = OBJ_txt2obj(ext.oid, 1) else { throw CryptoError.invalidArgument("OID \(ext.oid)") }
        let obj = try OpenSSLHandle(object, "OBJ_txt2obj") { ASN1_OBJECT_free($0) }
        let octets = try OpenSSLHandle(OpaquePointer(ASN1_OCTET_STRING_new()), "ASN1_OCTET_STRING_new") {
            ASN1_OCTET_STRING_free(UnsafeMutablePointer<ASN1_OCTET_STRING>($0))
        }
        try obj.withPointer { o in
            try octets.withPointer { raw in
                let data = UnsafeMutablePointer<ASN1_OCTET_STRING>(raw)
                guard ext.value.withUnsafeBufferPointer({ ASN1_OCTET_STRING_set(data, $0.baseAddress, Int32($0.count)) }) == 1 else {
                    throw CryptoError.openSSLFailure("ASN1_OCTET_STRING_set")
                }
                let created = try OpenSSLHandle(X509_EXTENSION_create_by_OBJ(nil, o, ext.isCritical ? 1 : 0, data),
                                                "X509_EXTENSION_create_by_OBJ") { X509_EXTENSION_free($0) }
                try created.withPointer { e in
                    guard X509_add_ext(x, e, -1) == 1 else { throw CryptoError.openSSLFailure("X509_add_ext") }
                }
            }
        }
    }
}
