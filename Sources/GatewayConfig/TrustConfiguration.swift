/// Trust anchors beyond the pinned Apple App Attest root (`trust`).
///
/// The Apple root is built in and always used; x5c certificates never supply anchors and the system
/// trust store is never consulted (DESIGN.md section 3).
public struct TrustConfiguration: Sendable, Hashable {
    /// Absolute paths of PEM files holding extra root certificates (`trust.extra_roots`; relative
    /// paths in YAML resolve against the configuration file's folder). For test devices only, such as
    /// the simulator's test CA: any key chaining to one of these is accepted like a real device's.
    /// Each file existed and held a PEM certificate when the configuration was loaded.
    public var extraRoots: [String]
    /// Absolute paths of PEM files holding extra **receipt** roots (`trust.extra_receipt_roots`): test
    /// receipt CAs (`AttestSimulator.TestReceiptCA`) whose receipts are then accepted like Apple's.
    public var extraReceiptRoots: [String] = []

    /// Creates a trust configuration (default: no extra roots).
    public init(extraRoots: [String] = []) {
        self.extraRoots = extraRoots
    }
}
