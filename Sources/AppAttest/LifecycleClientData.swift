/// The client data a key signs to renew or forget its registration (DESIGN.md section 8
/// "Lifecycle"): binding v1's framing (each field a 4-byte big-endian length, then its bytes) of
/// three fields: the label `renew-v1` or `forget-v1` (ASCII), the challenge (raw bytes, purpose
/// `renew` or `forget`), the keyId (32 raw bytes).
///
/// Device keys sign these bytes directly (ECDSA P-256 / SHA-256, DER); App Attest keys pass
/// SHA-256 of them as clientDataHash to `generateAssertion`, exactly as for a request.
public enum LifecycleClientData {
    /// What the signature authorises.
    public enum Action: String, Sendable, CaseIterable {
        /// Extend the registration (`POST {prefix}/renew`), label `renew-v1`.
        case renew
        /// Delete the registration (`POST {prefix}/forget`), label `forget-v1`.
        case forget

        /// The first framed field.
        public var label: String { rawValue + "-v1" }
    }

    /// The framed client data for `action` over `challenge` and `keyId` (raw bytes).
    public static func bytes(_ action: Action, challenge: [UInt8], keyId: [UInt8]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(12 + action.label.utf8.count + challenge.count + keyId.count)
        for field in [Array(action.label.utf8), challenge, keyId] {
            let length = UInt32(truncatingIfNeeded: field.count)
            out.append(UInt8(length >> 24)); out.append(UInt8(length >> 16 & 0xFF))
            out.append(UInt8(length >> 8 & 0xFF)); out.append(UInt8(length & 0xFF))
            out += field
        }
        return out
    }
}
