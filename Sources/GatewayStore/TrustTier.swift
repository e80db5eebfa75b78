/// How a key was established. Today only `appAttest` (full Apple App Attest attestation) exists;
/// DESIGN.md section 4 leaves room for lower tiers (simulators, devices without App Attest), so this is
/// an open set of identifiers rather than a closed enum.
public struct TrustTier: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// Stored form: 1...64 bytes of `[a-z0-9_]`.
    public let rawValue: String

    /// Validates a tier identifier; returns nil unless it is 1...64 bytes of `[a-z0-9_]`.
    public init?(rawValue: String) {
        let utf8 = rawValue.utf8
        guard (1...64).contains(utf8.count),
              utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f })
        else { return nil }
        self.rawValue = rawValue
    }

    /// A key attested through Apple App Attest (DESIGN.md section 3).
    public static let appAttest = TrustTier(validated: "app_attest")

    private init(validated: String) { rawValue = validated }

    /// Human-readable form for logs.
    public var description: String { rawValue }
}
