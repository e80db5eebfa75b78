import Foundation

/// Apple's App Attest service, in the shape of DeviceCheck's `DCAppAttestService` (blocking calls: the
/// SDK calls them off the main thread). `DeviceCheckAppAttestService` adapts the real one where
/// DeviceCheck exists; tests and the Linux example supply their own.
///
/// Every throwing method throws `AppAttestServiceError` (any other error is treated as
/// `unknownSystemFailure`).
public protocol AppAttestService: Sendable {
    /// `DCAppAttestService.isSupported`: whether App Attest can be used on this device.
    var isSupported: Bool { get }
    /// `generateKey`: a new App Attest key; returns its keyId (standard base64 of SHA-256 of the public key).
    func generateKey() throws -> String
    /// `attestKey(_:clientDataHash:)`: Apple's attestation object (CBOR) for `keyId` over the 32-byte
    /// `clientDataHash`. Apple attests a key once; a second call fails with `invalidKey`.
    func attestKey(_ keyId: String, clientDataHash: Data) throws -> Data
    /// `generateAssertion(_:clientDataHash:)`: an assertion object (CBOR) by `keyId` over `clientDataHash`.
    func generateAssertion(_ keyId: String, clientDataHash: Data) throws -> Data
}
