/// Where a registered device key lives (DESIGN.md section 8, field `backing` of `POST {prefix}/register`).
/// The raw value is the wire and stored form.
public enum DeviceKeyBacking: String, Sendable, Hashable, CaseIterable {
    /// A non-exportable key in the device's Secure Enclave.
    case secureEnclave = "secure_enclave"
    /// A key held in software (simulator, devices without a Secure Enclave).
    case software
}
