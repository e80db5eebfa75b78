// The certificate-file checks `check-config` runs for each TLS listener certificate.

internal import COpenSSL
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Checks one certificate chain file and its key file without building a TLS context, for
/// `check-config`: a pure function of the two files and `now`.
///
/// Errors: unreadable file, not PEM, no certificate, unusable or unsupported key (the same reading
/// rules as `TLSServerContext`), key not matching the leaf (X509_check_private_key(3)), chain out of
/// order (each certificate's issuer name must be the next one's subject name, RFC 5246 section
/// 7.4.2 / RFC 8446 section 4.4.2), a certificate expired or not yet valid (RFC 5280 section
/// 4.1.2.5). Warnings: a certificate expiring within 30 days (with its date), a leaf without
/// subjectAltName names.
package enum TLSCertificateCheck {
    /// How close to its notAfter a certificate gets a warning: 30 days, in seconds.
    package static let expiryWarningSeconds: Int64 = 30 * 86_400

    /// Every problem of `chainPath` + `keyPath` at `now` (seconds since 1970-01-01 UTC), in file
    /// order; empty when there is none.
    package static func problems(chainPath: String, keyPath: String, now: Int64) -> [TLSCertificateProblem] {
        var problems: [TLSCertificateProblem] = []
        var chain: [TLSHandle] = []
        do {
            chain = try TLSPEMFile.certificates(chainPath)
        } catch {
            problems.append(problem(error))
        }
        var key: TLSHandle?
        do {
            key = try TLSPEMFile.privateKey(keyPath)
        } catch {
            problems.append(problem(error))
        }
        guard let leaf = chain.first else { return problems }

        if let key {
            ERR_clear_error()
            if X509_check_private_key(leaf.pointer, key.pointer) != 1 {
                let reason = TLSOpenSSLErrors.drain(or: "key values mismatch")
                problems.append(TLSCertificateProblem(severity: .error, kind: .keyMismatch, path: keyPath,
                    message: "private key does not match the leaf certificate of \(chainPath) (\(reason))"))
            }
        }
        for index in chain.indices.dropLast() {
            let issuer = X509_get_issuer_name(chain[index].pointer)
            let next = X509_get_subject_name(chain[index + 1].pointer)
            if X509_NAME_cmp(issuer, next) != 0 {
                problems.append(TLSCertificateProblem(severity: .error, kind: .chainOrder, path: chainPath,
                    message: "chain out of order: certificate \(index + 1) (\(subject(chain[index]))) is issued by "
                        + "\(TLSX509Name.rfc2253(issuer)), but certificate \(index + 2) is \(subject(chain[index + 1])); "
                        + "put the leaf first, then each issuer after the certificate it issued"))
            }
        }
        for (index, certificate) in chain.enumerated() {
            let which = "certificate \(index + 1) (\(subject(certificate)))"
            guard let notBefore = epochSeconds(X509_get0_notBefore(certificate.pointer)),
                  let notAfter = epochSeconds(X509_get0_notAfter(certificate.pointer)) else {
                problems.append(TLSCertificateProblem(severity: .error, kind: .notPEM, path: chainPath,
                    message: "\(which) has an unreadable validity period"))
                continue
            }
            if now < notBefore {
                problems.append(TLSCertificateProblem(severity: .error, kind: .notYetValid, path: chainPath,
                    message: "\(which) is not valid before \(date(notBefore))"))
            } else if now > notAfter {
                problems.append(TLSCertificateProblem(severity: .error, kind: .expired, path: chainPath,
                    message: "\(which) expired on \(date(notAfter))"))
            } else if notAfter - now < expiryWarningSeconds {
                let days = (notAfter - now) / 86_400
                problems.append(TLSCertificateProblem(severity: .warning, kind: .expiresSoon, path: chainPath,
                    message: "\(which) expires on \(date(notAfter)) (in \(days) day\(days == 1 ? "" : "s"))"))
            }
        }
        if !hasSubjectAltName(leaf) {
            problems.append(TLSCertificateProblem(severity: .warning, kind: .noSubjectAltName, path: chainPath,
                message: "the leaf certificate (\(subject(leaf))) has no subjectAltName DNS name or IP address: "
                    + "clients do not match the subject CN, and SNI never selects it"))
        }
        return problems
    }

    /// The problem for a file error of `TLSPEMFile`.
    private static func problem(_ error: TLSContextError) -> TLSCertificateProblem {
        let kind: TLSCertificateProblem.Kind
        let path: String
        switch error {
        case .unreadableFile(let p, _): (kind, path) = (.unreadableFile, p)
        case .notPEM(let p, _): (kind, path) = (.notPEM, p)
        case .noCertificate(let p): (kind, path) = (.noCertificate, p)
        case .invalidKey(let p, _): (kind, path) = (.invalidKey, p)
        case .unsupportedKey(let p, _): (kind, path) = (.unsupportedKey, p)
        case .keyMismatch(_, let p, _): (kind, path) = (.keyMismatch, p)
        case .invalidSettings, .openSSL: (kind, path) = (.notPEM, "")
        }
        var message = error.description
        if !path.isEmpty, message.hasPrefix(path + ": ") { message.removeFirst(path.count + 2) }
        return TLSCertificateProblem(severity: .error, kind: kind, path: path, message: message)
    }

    /// Whether the leaf has a subjectAltName extension with at least one DNS name or IP address.
    private static func hasSubjectAltName(_ certificate: TLSHandle) -> Bool {
        guard let raw = X509_get_ext_d2i(certificate.pointer, NID_subject_alt_name, nil, nil) else {
            ERR_clear_error()
            return false
        }
        let names = OpaquePointer(raw)
        defer { GENERAL_NAMES_free(names) }
        for index in 0..<OPENSSL_sk_num(names) {
            guard let entry = OPENSSL_sk_value(names, index) else { continue }
            let type = entry.assumingMemoryBound(to: GENERAL_NAME.self).pointee.type
            if type == GEN_DNS || type == GEN_IPADD { return true }
        }
        return false
    }

    /// An ASN1_TIME as seconds since 1970-01-01 UTC (ASN1_TIME_to_tm(3), timegm(3)).
    private static func epochSeconds(_ time: UnsafePointer<ASN1_TIME>?) -> Int64? {
        var parts = tm()
        guard let time, ASN1_TIME_to_tm(time, &parts) == 1 else {
            ERR_clear_error()
            return nil
        }
        return Int64(timegm(&parts))
    }

    /// `YYYY-MM-DD HH:MM:SS UTC`.
    static func date(_ seconds: Int64) -> String {
        var t = time_t(seconds)
        var parts = tm()
        gmtime_r(&t, &parts)
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday)) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) UTC"
    }

    /// A certificate's subject, RFC 2253.
    private static func subject(_ certificate: TLSHandle) -> String { TLSX509Name.rfc2253(X509_get_subject_name(certificate.pointer)) }
}
