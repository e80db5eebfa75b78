/// What the SDK's store holds under its device-key item (`AttestClient.restoredDeviceKey()`).
enum StoredDeviceKey {
    /// A usable key: in memory, or restored by the `DeviceKeyFactory`.
    case restored(any DeviceKeySigner)
    /// No key is stored.
    case none
    /// A key is stored but cannot be used; the associated text says why (the factory's error, or a
    /// public key that is not 65 bytes). Registration replaces it and says so in the result's `detail`.
    case unusable(String)
}
