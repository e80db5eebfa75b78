import Foundation

/// The App Attest key this install uses, persisted: its keyId and whether Apple attested it (Apple
/// attests a key once; after that only assertions).
struct StoredAppAttestKey: Codable, Sendable, Equatable {
    var keyId: String
    var attested: Bool
    /// When the gateway accepted a registration carrying its attestation (unix seconds); nil when it
    /// has not (or in older records).
    var acceptedAt: Double?
    /// True while its attestation went to `/attest` without a definitive answer (a `5xx`, no answer):
    /// the gateway may hold the key, which is then recovered through `/renew` rather than replaced.
    var unconfirmed: Bool?
}
