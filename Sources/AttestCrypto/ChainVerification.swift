/// Outcome of a certificate chain verification.
public enum ChainVerification: Sendable, Equatable {
    /// The leaf chains to one of the pinned anchors at the requested time.
    case valid
    /// Verification failed; `code` is OpenSSL's `X509_V_ERR_*` value, `reason` its text
    /// (e.g. "certificate has expired", "unable to get local issuer certificate").
    case invalid(code: Int32, reason: String)

    /// True for `.valid`.
    public var isValid: Bool { self == .valid }
}
