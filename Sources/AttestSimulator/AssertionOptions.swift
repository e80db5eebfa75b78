/// Optional inputs of `SoftwareDevice.mintAssertion`: explicit counter, flags, iOS 27 map.
public struct AssertionOptions: Sendable {
    /// The counter to sign, or nil to use the device's next counter (last + 1). An explicit counter
    /// may go backwards (to mint replays); the device then keeps its higher last counter.
    public var counter: UInt32?
    /// The authenticatorData flags byte (default 0x40 like every real assertion).
    public var flags: UInt8
    /// The iOS 27 map appended to authenticatorData, or nil.
    public var ios27Extension: IOS27Extension?

    /// Options; every argument has the default described on its property.
    public init(counter: UInt32? = nil, flags: UInt8 = AuthenticatorDataBuilder.assertionFlags, ios27Extension: IOS27Extension? = nil) {
        self.counter = counter
        self.flags = flags
        self.ios27Extension = ios27Extension
    }
}
