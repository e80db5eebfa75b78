import AppAttest
import AttestCrypto
import GatewayRules

/// Builds App Attest authenticatorData (WebAuthn layout) exactly as devices produce it
/// (Apple: "Validating apps that connect to your server"; shared/vectors/README.md).
///
/// - attestation: `rpIdHash(32) | flags 0x40 | counter 0 (4, BE) | aaguid(16) | credentialIdLength(2, BE)
///   | credentialId (= keyId, 32) | COSE_Key [| iOS 27 map]` - 164 bytes without the map.
/// - assertion: `rpIdHash(32) | flags (0x40 as on every real device) | counter (4, BE) [| iOS 27 map]`.
///
/// rpIdHash = SHA-256 of the App ID's UTF-8 bytes ("TEAMID.bundle.id"). Thread-safe (stateless).
public enum AuthenticatorDataBuilder {
    /// Flags of attestations: AT (0x40) only; ED is never set, even with the iOS 27 map.
    public static let attestationFlags: UInt8 = 0x40
    /// Flags of assertions: 0x40, as in all 29 real assertions of shared/vectors.
    public static let assertionFlags: UInt8 = 0x40

    /// The COSE_Key of a P-256 public key, `{1: 2, 3: -7, -1: 1, -2: x, -3: y}` in that order
    /// (RFC 9053 EC2 / ES256 / P-256; Apple's layout, 77 bytes).
    /// - Parameter publicKeyPoint: the 65-byte uncompressed point `04 || X || Y`.
    /// - Throws: `SimulatorError.invalidKey` for another length or prefix.
    public static func coseKey(publicKeyPoint: [UInt8]) throws -> [UInt8] {
        guard publicKeyPoint.count == 65, publicKeyPoint[0] == 0x04 else {
            throw SimulatorError.invalidKey("expected a 65-byte uncompressed P-256 point")
        }
        var out: [UInt8] = []
        CBORWriter.appendHead(major: 5, argument: 5, to: &out)
        CBORWriter.appendInteger(1, to: &out); CBORWriter.appendInteger(2, to: &out)    // kty: EC2
        CBORWriter.appendInteger(3, to: &out); CBORWriter.appendInteger(-7, to: &out)   // alg: ES256
        CBORWriter.appendInteger(-1, to: &out); CBORWriter.appendInteger(1, to: &out)   // crv: P-256
        CBORWriter.appendInteger(-2, to: &out); CBORWriter.appendBytes(Array(publicKeyPoint[1..<33]), to: &out)
        CBORWriter.appendInteger(-3, to: &out); CBORWriter.appendBytes(Array(publicKeyPoint[33..<65]), to: &out)
        return out
    }

    /// authenticatorData of an attestation for the key `publicKeyPoint`.
    /// - Parameters:
    ///   - appId: "TEAMID.bundle.id".
    ///   - environment: selects the aaguid (`appattestdevelop` / `appattest` + 7 zero bytes).
    ///   - publicKeyPoint: the 65-byte uncompressed device key point; credentialId = SHA-256 of it.
    ///   - ios27Extension: the trailing iOS 27 map, or nil.
    /// - Throws: `SimulatorError.invalidKey` when the point is not 65 bytes `04 || X || Y`.
    public static func attestation(appId: String, environment: AppAttestEnvironment, publicKeyPoint: [UInt8],
                                   ios27Extension: IOS27Extension? = nil) throws -> [UInt8] {
        let cose = try coseKey(publicKeyPoint: publicKeyPoint)
        let keyId = SHA256.hash(publicKeyPoint)
        var out = SHA256.hash(utf8: appId)
        out.reserveCapacity(37 + 16 + 2 + keyId.count + cose.count + 64)
        out.append(attestationFlags)
        out += [0, 0, 0, 0]
        out += environment.aaguid
        out += [UInt8(keyId.count >> 8), UInt8(keyId.count & 0xFF)]
        out += keyId
        out += cose
        if let ios27Extension { out += ios27Extension.encoded }
        return out
    }

    /// authenticatorData of an assertion.
    /// - Parameters:
    ///   - appId: "TEAMID.bundle.id".
    ///   - counter: the signature counter, written as 4 bytes big-endian.
    ///   - flags: the flags byte (default 0x40).
    ///   - ios27Extension: the trailing iOS 27 map, or nil.
    public static func assertion(appId: String, counter: UInt32, flags: UInt8 = assertionFlags,
                                 ios27Extension: IOS27Extension? = nil) -> [UInt8] {
        var out = SHA256.hash(utf8: appId)
        out.append(flags)
        out += [UInt8(counter >> 24), UInt8(counter >> 16 & 0xFF), UInt8(counter >> 8 & 0xFF), UInt8(counter & 0xFF)]
        if let ios27Extension { out += ios27Extension.encoded }
        return out
    }
}
