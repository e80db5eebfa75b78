// One problem `TLSCertificateCheck` found in a certificate chain or key file.

/// A problem with a listener's certificate files, as `check-config` reports it: severity, kind,
/// the file it concerns and a sentence. Printed as `path: message`.
package struct TLSCertificateProblem: Sendable, Hashable, CustomStringConvertible {
    /// Whether the gateway refuses the certificate (`error`) or an operator should look (`warning`).
    package enum Severity: String, Sendable, Hashable {
        /// The listener cannot serve this certificate (or clients will refuse it).
        case error
        /// It works today; act soon.
        case warning
    }

    /// What is wrong.
    package enum Kind: String, Sendable, Hashable {
        /// The file cannot be read (error).
        case unreadableFile
        /// No PEM block, or a block that does not decode (error).
        case notPEM
        /// The chain file holds no CERTIFICATE block (error).
        case noCertificate
        /// The key file holds no usable private key, e.g. an encrypted one (error).
        case invalidKey
        /// The key is neither P-256 nor RSA of at least 2048 bits (error).
        case unsupportedKey
        /// The key is not the leaf's (error).
        case keyMismatch
        /// A certificate is not followed by its issuer: certificate i's issuer name is not
        /// certificate i+1's subject name (error).
        case chainOrder
        /// A certificate's notAfter is in the past (error).
        case expired
        /// A certificate's notBefore is in the future (error).
        case notYetValid
        /// A certificate expires within `TLSCertificateCheck.expiryWarningSeconds` (warning).
        case expiresSoon
        /// The leaf has no subjectAltName DNS name or IP address; clients match names only there
        /// (RFC 6125 section 6.4.4), and SNI selection never picks it (warning).
        case noSubjectAltName
    }

    /// Error or warning.
    package var severity: Severity
    /// What is wrong.
    package var kind: Kind
    /// The file concerned (the chain file, or the key file for key problems).
    package var path: String
    /// A sentence saying what is wrong (with dates in UTC, `YYYY-MM-DD HH:MM:SS UTC`).
    package var message: String

    /// A problem.
    package init(severity: Severity, kind: Kind, path: String, message: String) {
        self.severity = severity
        self.kind = kind
        self.path = path
        self.message = message
    }

    /// `path: message`.
    package var description: String { "\(path): \(message)" }
}
