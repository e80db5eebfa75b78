import GatewayRules

/// The aaguid of each App Attest environment (Apple: attestation step 8; `authenticatorData`
/// bytes 37..<53 of an attestation).
extension AppAttestEnvironment {
    /// The 16-byte aaguid: `appattestdevelop`, or `appattest` followed by seven 0x00 bytes.
    public var aaguid: [UInt8] {
        switch self {
        case .development: return Array("appattestdevelop".utf8)
        case .production: return Array("appattest".utf8) + [UInt8](repeating: 0, count: 7)
        }
    }

    /// The environment whose aaguid equals `aaguid` (compared in constant time per candidate), or nil.
    public init?(aaguid: [UInt8]) {
        var found: AppAttestEnvironment? = nil
        for candidate in AppAttestEnvironment.allCases where ConstantTimeBytes.equal(candidate.aaguid, aaguid) { found = candidate }
        guard let found else { return nil }
        self = found
    }
}
