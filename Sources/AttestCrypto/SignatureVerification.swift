/// Outcome of an ECDSA signature check.
public enum SignatureVerification: Sendable, Equatable {
    /// The signature is strict DER and valid for the message and key.
    case valid
    /// The signature is strict DER but does not verify.
    case invalid
    /// The signature bytes are not a strict-DER `ECDSA-Sig-Value` (raw r||s, BER, padding, trailing
    /// bytes, non-minimal integers, negative or zero-length integers). Never verified further.
    case malformedEncoding
}
