import Foundation

/// A passed registration as persisted between launches: the result, and how requests are signed.
struct StoredRegistration: Codable, Sendable, Equatable {
    /// `device` (signed by the device key) or `app_attest` (signed with App Attest assertions).
    enum Signing: String, Codable, Sendable { case device, appAttest = "app_attest" }

    var attestation: Attestation
    var signing: Signing
    /// The App Attest keyId (standard base64) for `app_attest` signing.
    var appAttestKeyId: String?
    /// When the client obtained it (unix seconds); nil in records written before this field.
    var obtainedAt: Double?

    /// Whether the result is still valid at `now` with `margin` seconds to spare.
    func isValid(now: Double, margin: Double) -> Bool {
        guard attestation.verdict == .passed else { return false }
        guard let expiresAt = attestation.expiresAt else { return true }
        return Double(expiresAt) - margin > now
    }
}
