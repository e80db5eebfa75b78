/// Stable machine-readable reason for an App Attest decision (DESIGN.md section 2 taxonomy).
///
/// The raw values are snake_case identifiers that the gateway puts in `App-Attest-Error` /
/// `App-Attest-Reason` and in its JSON answers; they never change meaning once released.
public enum ReasonCode: String, Sendable, CaseIterable, Equatable {
    // MARK: encoding (HTTP 400 at the gateway)
    /// A binary header or field is not standard / URL-safe base64 (padded or not).
    case encodingInvalid = "encoding_invalid"
    /// A keyId does not decode to exactly 32 bytes.
    case keyIdInvalid = "key_id_invalid"

    // MARK: attestation (Apple: "Validating apps that connect to your server", attestation steps 1-9)
    /// The object is not well-formed strict CBOR (indefinite length, duplicate key, trailing bytes, ...).
    case cborMalformed = "cbor_malformed"
    /// The CBOR is well-formed but not an attestation object (missing or mistyped fmt/attStmt/authData/x5c).
    case attestationMalformed = "attestation_malformed"
    /// `fmt` is not "apple-appattest".
    case fmtUnsupported = "fmt_unsupported"
    /// `x5c` does not hold exactly [leaf, intermediate].
    case x5cLength = "x5c_length"
    /// A certificate in `x5c` is not a DER X.509 certificate (or its key is not P-256 for the leaf).
    case certificateMalformed = "certificate_malformed"
    /// The chain does not verify to the pinned App Attest root at the validation time (step 1).
    case chainInvalid = "chain_invalid"
    /// The leaf lacks a well-formed nonce extension 1.2.840.113635.100.8.2 (step 4).
    case nonceExtensionMalformed = "nonce_extension_malformed"
    /// SHA256(authData || clientDataHash) differs from the nonce extension (steps 2-4).
    case nonceMismatch = "nonce_mismatch"
    /// SHA256(leaf public key point) differs from the keyId (step 5).
    case keyIdMismatch = "key_id_mismatch"
    /// authenticatorData could not be parsed (lengths, flags, COSE key, trailing bytes).
    case authDataMalformed = "auth_data_malformed"
    /// rpIdHash matches no configured App ID (step 6).
    case rpIdMismatch = "rp_id_mismatch"
    /// The attestation counter is not 0 (step 7).
    case counterNotZero = "counter_not_zero"
    /// aaguid is not allowed by the app's environment policy, or is unknown (step 8).
    case envMismatch = "env_mismatch"
    /// credentialId differs from the keyId (step 9).
    case credentialIdMismatch = "credential_id_mismatch"
    /// The COSE key in authenticatorData differs from the leaf certificate key.
    case coseKeyMismatch = "cose_key_mismatch"

    // MARK: assertion (Apple: assertion steps 1-6)
    /// The assertion CBOR is well-formed but lacks `signature` / `authenticatorData` byte strings.
    case assertionMalformed = "assertion_malformed"
    /// The signature is not strict DER (raw r||s, BER, padded, truncated).
    case signatureEncoding = "signature_encoding"
    /// The ECDSA signature over the nonce does not verify (step 3).
    case badSignature = "bad_signature"
    /// The counter is not strictly greater than the stored counter (step 5).
    case counterReplay = "counter_replay"

    // MARK: device-key registration (DESIGN.md section 8; HTTP 400 at the gateway)
    /// `publicKey` is not a 65-byte uncompressed P-256 point on the curve.
    case publicKeyInvalid = "public_key_invalid"
    /// `backing` is neither `secure_enclave` nor `software`.
    case backingUnknown = "backing_unknown"
    /// `integrity` is not a list of at most 16 short codes of `[a-z0-9_]` without duplicates.
    case integrityInvalid = "integrity_invalid"

    // MARK: receipt (risk signal, not a gate by default)
    /// The receipt is not a CMS SignedData of the expected shape.
    case receiptMalformed = "receipt_malformed"
    /// The receipt's CMS signature (or its messageDigest attribute) does not verify.
    case receiptSignatureInvalid = "receipt_signature_invalid"
    /// The receipt signer does not chain to Apple Root CA - G3 at the receipt's creation time.
    case receiptChainInvalid = "receipt_chain_invalid"
    /// The receipt in an attestation is not this attestation's: its attested key, App ID or client
    /// hash differ (Apple: "Assessing fraud risk", the receipt fields); it is neither kept nor reported
    /// as valid.
    case receiptNotBound = "receipt_not_bound"
}
