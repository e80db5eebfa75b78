/// Optional inputs of `SoftwareDevice.mintAttestation`: leaf validity, iOS 27 map, receipt.
///
/// Leaf validity follows shared/tools/ref_device.py: without `notBefore`, the leaf is valid from
/// now - 1 hour to now + `leafLifetime`; with `notBefore`, from `notBefore` to `notBefore +
/// leafLifetime`. Times are seconds since the epoch (UTC).
public struct AttestationOptions: Sendable {
    /// The iOS 27 map appended to authenticatorData (ED flag stays clear), or nil (iOS 14-26 layout).
    public var ios27Extension: IOS27Extension?
    /// Leaf notBefore, or nil for "now - 3600".
    public var notBefore: Int64?
    /// Leaf lifetime in seconds (default 3 days, like Apple's 2020-2022 and 2026 leaves); must be > 0.
    public var leafLifetime: Int64
    /// `attStmt.receipt` bytes. Real receipts are CMS signed by Apple and cannot be minted; the
    /// default is ref_device.py's placeholder `test-receipt`, which verifiers treat as an invalid
    /// receipt (a risk signal, not a gate).
    public var receipt: [UInt8]
    /// The current time used for the default validity window, or nil to read the clock.
    public var now: Int64?

    /// ref_device.py's placeholder receipt bytes, "test-receipt".
    public static let placeholderReceipt: [UInt8] = Array("test-receipt".utf8)

    /// Options; every argument has the default described on its property.
    public init(ios27Extension: IOS27Extension? = nil, notBefore: Int64? = nil, leafLifetime: Int64 = 3 * 86_400,
                receipt: [UInt8] = AttestationOptions.placeholderReceipt, now: Int64? = nil) {
        self.ios27Extension = ios27Extension
        self.notBefore = notBefore
        self.leafLifetime = leafLifetime
        self.receipt = receipt
        self.now = now
    }
}
