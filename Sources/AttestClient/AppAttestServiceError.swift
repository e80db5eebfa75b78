/// The errors of Apple's App Attest service: `DCError.Code` from DeviceCheck, with Apple's raw values,
/// so that the platform-neutral logic can follow Apple's rules for each (DESIGN.md section 9).
///
/// Apple: "DCError.Code" (DeviceCheck). What `AttestClient` does with each:
/// - `featureUnsupported`: falls back to the device key alone (tier `device`).
/// - `serverUnavailable`: tries again later with the same key and the same clientDataHash.
/// - `invalidKey`: establishes whether the key is attested, never attested or rejected, then replaces it.
/// - `invalidInput`, `unknownSystemFailure`: discards the key.
public enum AppAttestServiceError: Int, Error, Sendable, Equatable, CaseIterable {
    /// `DCError.Code.unknownSystemFailure` (0): a failure not otherwise described.
    case unknownSystemFailure = 0
    /// `DCError.Code.featureUnsupported` (1): App Attest is not available on this device or app.
    case featureUnsupported = 1
    /// `DCError.Code.invalidInput` (2): bad input to the API (e.g. a clientDataHash of the wrong size).
    case invalidInput = 2
    /// `DCError.Code.invalidKey` (3): the key is invalid (unknown, already attested, or rejected).
    case invalidKey = 3
    /// `DCError.Code.serverUnavailable` (4): Apple's server could not be reached; try again later.
    case serverUnavailable = 4
}
