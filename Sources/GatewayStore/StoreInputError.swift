/// Input that a store value type refuses to wrap. Thrown by the throwing initialisers of `KeyID`,
/// `Challenge` and `KeyRecord`, before anything reaches a store, so a store operation never sees
/// malformed input and never writes part of it.
public enum StoreInputError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A keyId that is not 32 bytes; carries the length received.
    case keyIdLength(Int)
    /// A challenge that is not 16...64 bytes; carries the length received.
    case challengeLength(Int)
    /// A public key that is not a 65-byte X9.63 uncompressed point (0x04 || X || Y); carries its length.
    case publicKey(Int)
    /// An appId that is empty, longer than 255 bytes, or not printable ASCII.
    case appId
    /// A trust tier that is empty, longer than 64 bytes, or not made of `[a-z0-9_]`.
    case trustTier
    /// An account hash that is not 32 bytes; carries the length received.
    case accountHashLength(Int)
    /// Integrity codes outside `GatewayRules.IntegrityCodes` bounds; carries the problem.
    case integrity(String)

    /// Human-readable form for logs.
    public var description: String {
        switch self {
        case .keyIdLength(let n): return "keyId must be 32 bytes, got \(n)"
        case .challengeLength(let n): return "challenge must be 16...64 bytes, got \(n)"
        case .publicKey(let n): return "public key must be a 65-byte uncompressed P-256 point, got \(n) bytes"
        case .appId: return "appId must be 1...255 bytes of printable ASCII"
        case .trustTier: return "trust tier must be 1...64 bytes of [a-z0-9_]"
        case .accountHashLength(let n): return "account hash must be 32 bytes, got \(n)"
        case .integrity(let problem): return problem
        }
    }
}
