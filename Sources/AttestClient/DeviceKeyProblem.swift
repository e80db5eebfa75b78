/// Why `AttestClient.loadOrCreateDeviceKey()` has no device key to register.
enum DeviceKeyProblem: Error {
    /// The `DeviceKeyFactory` could not make a key (registration falls back to App Attest alone in
    /// automatic mode, else the result is `.unsupported`).
    case cannotCreate(any Error)
    /// A key was made but could not be written to the store: the associated text is the result's
    /// `detail`. Nothing is registered: a registration whose key is gone at the next launch would
    /// spend an attestation for nothing.
    case cannotStore(String)
}
