/// How a key was established (DESIGN.md sections 4 and 8): `attested` (App Attest vouched for it; the
/// legacy stored form `app_attest` reads the same) or `device` (a device key's proof of possession
/// only). An open set of identifiers rather than a closed enum, so that a record written by a newer
/// gateway still reads.
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

    /// A key attested through Apple App Attest (DESIGN.md section 3), as records written by
    /// `POST {prefix}/attest` before tiers existed store it; read as `attested` (see `effective`).
    public static let appAttest = TrustTier(validated: "app_attest")
    /// App Attest vouched for the key (DESIGN.md section 8): an attestation, or a device-key
    /// registration carrying an App Attest attestation or assertion.
    public static let attested = TrustTier(validated: "attested")
    /// Proof of possession of a device key only (no App Attest).
    public static let device = TrustTier(validated: "device")

    /// The tier policy compares: `app_attest` reads as `attested`, every other value as itself.
    public var effective: TrustTier { self == .appAttest ? .attested : self }

    /// Whether a key of this tier passes a route whose `min_tier` is `minimum`: `attested` passes
    /// `attested` and `device`; `device` passes `device`; an unknown stored tier passes nothing.
    public func satisfies(_ minimum: TrustTier) -> Bool {
        let mine = TrustTier.rank(effective), needed = TrustTier.rank(minimum.effective)
        return mine > 0 && mine >= needed
    }

    private static func rank(_ tier: TrustTier) -> Int {
        switch tier.rawValue {
        case "attested": return 2
        case "device": return 1
        default: return 0
        }
    }

    private init(validated: String) { rawValue = validated }

    /// Human-readable form for logs.
    public var description: String { rawValue }
}
