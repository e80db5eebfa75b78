/// The App Attest environment of a key, read from the aaguid (Apple: attestation step 8).
public enum AppAttestEnvironment: String, Sendable, CaseIterable {
    /// aaguid `appattestdevelop` (development builds; receipts say "sandbox").
    case development
    /// aaguid `appattest` followed by seven 0x00 bytes.
    case production

    /// The 16-byte aaguid.
    public var aaguid: [UInt8] {
        switch self {
        case .development: return Array("appattestdevelop".utf8)
        case .production: return Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        }
    }

    /// The environment whose aaguid equals `aaguid` (constant-time per candidate), or nil.
    public init?(aaguid: [UInt8]) {
        var found: AppAttestEnvironment? = nil
        for candidate in AppAttestEnvironment.allCases where ConstantTimeBytes.equal(candidate.aaguid, aaguid) { found = candidate }
        guard let found else { return nil }
        self = found
    }
}
