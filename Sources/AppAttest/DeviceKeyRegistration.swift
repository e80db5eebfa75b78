import AttestCrypto
import GatewayRules

/// One `POST {prefix}/register` request as decoded from its JSON (DESIGN.md section 8), before any
/// check: the device key (P-256, Secure Enclave or software) proves possession by signing the
/// **registration client data**, optionally with App Attest evidence over the same bytes.
///
/// Registration client data = binding v1's framing (each field a 4-byte big-endian length, then its
/// bytes): `"register-v1"`, challenge (raw), publicKey (65 bytes), backing (as sent, UTF-8), the
/// integrity codes joined by `,` (UTF-8; empty when none).
public struct DeviceKeyRegistration: Sendable {
    /// App Attest evidence that the registration may carry (field `appAttest`).
    public enum AppAttestEvidence: Sendable {
        /// `{"keyId", "attestation"}`: an attestation whose clientDataHash is SHA-256 of the
        /// registration client data (spends one of Apple's attestations).
        case attestation(keyId: [UInt8], object: [UInt8])
        /// `{"keyId", "assertion"}`: an assertion over the registration client data by an App Attest
        /// key the gateway already attested (spends nothing).
        case assertion(keyId: [UInt8], object: [UInt8])

        /// The App Attest keyId (32 bytes when well-formed).
        public var keyId: [UInt8] {
            switch self {
            case .attestation(let keyId, _), .assertion(let keyId, _): return keyId
            }
        }
    }

    /// The device key, X9.63 bytes as sent (65 bytes `04 || X || Y` when well-formed).
    public let publicKey: [UInt8]
    /// The challenge bytes as decoded (purpose `register`, issued for keyId = SHA-256(publicKey)).
    public let challenge: [UInt8]
    /// DER ECDSA P-256 / SHA-256 signature by the device key over `clientData`.
    public let signature: [UInt8]
    /// `backing` as sent (`secure_enclave` | `software` when valid).
    public let backing: String
    /// `integrity` as sent, in order.
    public let integrity: [String]
    /// `appAttest`, if any.
    public let appAttest: AppAttestEvidence?

    /// Wraps decoded fields; nothing is checked here (see `DeviceKeyRegistrationVerifier`).
    public init(publicKey: [UInt8], challenge: [UInt8], signature: [UInt8], backing: String, integrity: [String],
                appAttest: AppAttestEvidence?) {
        self.publicKey = publicKey
        self.challenge = challenge
        self.signature = signature
        self.backing = backing
        self.integrity = integrity
        self.appAttest = appAttest
    }

    /// The first field of the registration client data.
    public static let context: [UInt8] = Array("register-v1".utf8)

    /// The registration client data of this request (what the device key signs).
    public var clientData: [UInt8] {
        DeviceKeyRegistration.clientData(challenge: challenge, publicKey: publicKey, backing: backing, integrity: integrity)
    }

    /// The registration client data: framed `"register-v1"`, challenge, publicKey, backing, codes
    /// joined by `,`.
    public static func clientData(challenge: [UInt8], publicKey: [UInt8], backing: String, integrity: [String]) -> [UInt8] {
        framed([context, challenge, publicKey, Array(backing.utf8), Array(integrity.joined(separator: ",").utf8)])
    }

    /// Binding v1's framing: each field a 4-byte big-endian length, then its bytes (fields here are
    /// bounded by the endpoint's 64 KiB body limit, far below 2^32).
    public static func framed(_ fields: [[UInt8]]) -> [UInt8] {
        var out = [UInt8]()
        out.reserveCapacity(fields.reduce(0) { $0 + 4 + $1.count })
        for field in fields {
            let length = UInt32(truncatingIfNeeded: field.count)
            out.append(UInt8(length >> 24)); out.append(UInt8(length >> 16 & 0xFF))
            out.append(UInt8(length >> 8 & 0xFF)); out.append(UInt8(length & 0xFF))
            out += field
        }
        return out
    }
}
