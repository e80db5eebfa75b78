/// The verdict on a device-key registration: accepted with the registered key, or rejected with the
/// reason of the first failed check and whether an App Attest attestation was spent on it (then the
/// gateway answers `registration_refused` with a back-off, DESIGN.md section 8).
public enum DeviceKeyRegistrationDecision: Sendable {
    /// Every check passed.
    case accepted(RegisteredDeviceKey)
    /// The first failed check's reason, a detail for logs, and whether the failure is the App Attest
    /// attestation's (the device key's possession was proven and an attestation, a token Apple limits
    /// per device, was spent on a registration that failed).
    case rejected(ReasonCode, detail: String, spentAttestation: Bool)

    /// True when accepted.
    public var isAccepted: Bool { if case .accepted = self { return true } else { return false } }
    /// The reason when rejected.
    public var reason: ReasonCode? { if case .rejected(let reason, _, _) = self { return reason } else { return nil } }
}
