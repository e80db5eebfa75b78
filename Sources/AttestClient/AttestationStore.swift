import Foundation

/// Where the SDK keeps what must survive a relaunch: the device key's representation, the App
/// Attest keyId, the last passed `Attestation` and the back-off after refused registrations. Items are
/// small named blobs. `KeychainAttestationStore` on Apple platforms, `FileAttestationStore` elsewhere.
public protocol AttestationStore: Sendable {
    /// The bytes stored under `name`, nil when there are none (or they cannot be read).
    func data(for name: String) -> Data?
    /// The bytes stored under `name`, nil when there are none.
    /// - Throws: when the store cannot tell (the Keychain before the first unlock after a reboot,
    ///   an unreadable file). The SDK then generates nothing and spends nothing. The default
    ///   implementation answers `data(for:)` and never throws.
    func read(_ name: String) throws -> Data?
    /// Stores `data` under `name`, replacing what was there; nil removes the item (the same query or
    /// path that saved it).
    /// - Throws: when the item cannot be written or removed.
    func set(_ data: Data?, for name: String) throws
}

extension AttestationStore {
    /// `data(for:)`: a store that cannot tell "absent" from "unreadable" never throws.
    public func read(_ name: String) throws -> Data? { data(for: name) }
}
