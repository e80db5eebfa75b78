import Foundation

/// Where the SDK keeps what must survive a relaunch: the device key's representation, the App
/// Attest keyId, the last passed `Attestation` and the back-off after refused registrations. Items are
/// small named blobs. `KeychainAttestationStore` on Apple platforms, `FileAttestationStore` elsewhere.
public protocol AttestationStore: Sendable {
    /// The bytes stored under `name`, nil when there are none (or they cannot be read).
    func data(for name: String) -> Data?
    /// Stores `data` under `name`, replacing what was there; nil removes the item (the same query or
    /// path that saved it).
    /// - Throws: when the item cannot be written or removed.
    func set(_ data: Data?, for name: String) throws
}
