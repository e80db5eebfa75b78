import Foundation

/// An App Attest service that is never supported (the default where DeviceCheck does not exist): the
/// SDK registers its device key alone.
public struct UnavailableAppAttestService: AppAttestService {
    /// Creates one.
    public init() {}
    /// Always false.
    public var isSupported: Bool { false }
    /// Always throws `featureUnsupported`.
    public func generateKey() throws -> String { throw AppAttestServiceError.featureUnsupported }
    /// Always throws `featureUnsupported`.
    public func attestKey(_ keyId: String, clientDataHash: Data) throws -> Data { throw AppAttestServiceError.featureUnsupported }
    /// Always throws `featureUnsupported`.
    public func generateAssertion(_ keyId: String, clientDataHash: Data) throws -> Data { throw AppAttestServiceError.featureUnsupported }
}
