/// Names of individual verification steps as they appear in traces and in the `expected` blocks of
/// the shared test vectors (shared/vectors/README.md "Checks and expected verdicts").
public enum VerificationCheck: String, Sendable, CaseIterable, Equatable {
    // attestation
    /// CBOR map decodes.
    case cborDecodes = "cbor_decodes"
    /// fmt == "apple-appattest".
    case fmt
    /// x5c chains to the pinned root at the validation time.
    case chain
    /// Nonce extension equals SHA256(authData || clientDataHash).
    case nonce
    /// SHA256(leaf point) == keyId.
    case keyId
    /// rpIdHash == SHA256(appId) (attestation and assertion).
    case rpIdHash
    /// Attestation counter == 0.
    case counterZero = "counter_zero"
    /// aaguid matches the environment.
    case aaguid
    /// credentialId == keyId.
    case credentialId
    /// COSE key == leaf key.
    case coseKeyMatchesLeaf = "cose_key_matches_leaf"
    /// Receipt field 4 == clientDataHash (ATTEST receipts).
    case receiptClientHashMatches = "receipt_client_hash_matches"
    /// Receipt CMS signature valid and signer chains to Apple Root CA - G3.
    case receiptSignature = "receipt_signature"
    // assertion
    /// ECDSA signature over the nonce verifies (also a receipt check: CMS signature).
    case signature
    /// Counter equals the vector's expected counter (tooling only).
    case counterMatchesExpected = "counter_matches_expected"
    /// Counter > previous counter.
    case counterGreaterThanPrevious = "counter_greater_than_previous"
    /// SHA256(public key point) == keyId (tooling only).
    case publicKeyMatchesKeyId = "publicKey_matches_keyId"
    /// clientDataHash == SHA256(clientData) (tooling only).
    case clientDataHashIsSHA256OfClientData = "clientDataHash_is_sha256_of_clientData"
    // receipt
    /// Receipt signer chains to Apple Root CA - G3 at creation time.
    case signerChain = "signer_chain"
    /// Receipt App ID equals the expected App ID.
    case appId = "app_id"
    /// SHA256(point of the receipt's attested certificate) == keyId.
    case attestedKeyMatchesKeyId = "attested_key_matches_keyId"
    /// Receipt type equals the expected type.
    case receiptType = "receipt_type"
}
