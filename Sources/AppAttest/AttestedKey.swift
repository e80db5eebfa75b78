import AttestCrypto
import GatewayRules

/// What a successful attestation establishes - the values of the gateway's key record
/// (DESIGN.md section 3: "store public key, receipt, environment, app, time").
public struct AttestedKey: Sendable {
    /// keyId = SHA-256 of the public key point (32 bytes).
    public let keyId: [UInt8]
    /// The parsed public key, ready for assertion checks (thread-safe, cache it per keyId).
    public let publicKey: P256PublicKey
    /// The uncompressed public key point `04 || X || Y` (65 bytes), for storage.
    public var publicKeyPoint: [UInt8] { publicKey.x963Representation }
    /// Environment from the aaguid.
    public let environment: AppAttestEnvironment
    /// The matched App ID ("TEAMID.bundle.id").
    public let appId: String
    /// The counter after attestation (always 0).
    public let counter: UInt32
    /// The instant the attestation was verified at (seconds since the epoch, the `now` input).
    public let attestedAt: Int64
    /// notAfter of the credential certificate (seconds since the epoch).
    public let certificateNotAfter: Int64
    /// `attStmt.receipt` as received (store it to refresh receipts with Apple later).
    public let receipt: [UInt8]?
    /// The receipt's decoded fields and signature status (a risk signal, not a gate).
    public let receiptVerification: ReceiptVerification?
    /// iOS 27 signals from authenticatorData, if present.
    public let signals: AuthenticatorSignals?
}
