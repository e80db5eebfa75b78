import AppAttest
import AttestCrypto
import Foundation
import GatewayRules
import XCTest

/// A test CA (P-384 root and intermediate, like Apple's) and a P-256 device key, minting App Attest
/// objects with AttestCrypto's signing side - independent of the AttestSimulator module.
final class TestCA: @unchecked Sendable {  // immutable after init
    let rootKey: ECPrivateKey
    let root: X509Certificate
    let intermediateKey: ECPrivateKey
    let intermediate: X509Certificate
    static let notBefore: Int64 = 1_577_836_800  // 2020-01-01
    static let notAfter: Int64 = 2_366_841_600  // 2045-01-01

    init(name: String = "TEST App Attestation") throws {
        rootKey = try ECPrivateKey(generatingOn: .p384)
        intermediateKey = try ECPrivateKey(generatingOn: .p384)
        let rootName = [NameAttribute("CN", "\(name) Root CA"), NameAttribute("O", "Test"), NameAttribute("ST", "California")]
        var r = CertificateBuilder(subject: rootName, issuer: rootName, serialNumber: try SecureRandom.bytes(count: 8).map { $0 & 0x7F },
                                   notBefore: Self.notBefore, notAfter: Self.notAfter)
        r.addBasicConstraints(ca: true)
        r.addSubjectKeyIdentifier(for: rootKey.publicKeyPoint)
        r.addKeyUsage([.keyCertSign, .cRLSign])
        root = try r.sign(subjectPublicKey: rootKey, issuerKey: rootKey, digest: .sha384)
        let interName = [NameAttribute("CN", "\(name) CA 1"), NameAttribute("O", "Test"), NameAttribute("ST", "California")]
        var i = CertificateBuilder(subject: interName, issuer: rootName, serialNumber: [0x01, 0x02],
                                   notBefore: Self.notBefore, notAfter: Self.notAfter - 86400)
        i.addBasicConstraints(ca: true, pathLength: 0)
        i.addAuthorityKeyIdentifier(issuerPublicKeyPoint: rootKey.publicKeyPoint)
        i.addSubjectKeyIdentifier(for: intermediateKey.publicKeyPoint)
        i.addKeyUsage([.keyCertSign, .cRLSign])
        intermediate = try i.sign(subjectPublicKey: intermediateKey, issuerKey: rootKey, digest: .sha384)
    }

    var trust: TrustAnchors { get throws { try TrustAnchors.apple.adding(appAttestRoots: [root]) } }

    /// A credential certificate for `deviceKey` with the given nonce extension value (raw DER).
    func leaf(deviceKey: ECPrivateKey, nonceExtension: [UInt8]?, notBefore: Int64 = 1_700_000_000,
              notAfter: Int64 = 1_700_000_000 + 3 * 86400, extraExtensions: [X509Extension] = []) throws -> X509Certificate {
        let keyId = SHA256.hash(deviceKey.publicKeyPoint)
        var b = CertificateBuilder(subject: [NameAttribute("CN", hex(keyId)), NameAttribute("OU", "AAA Certification"), NameAttribute("O", "Test")],
                                   issuer: intermediate.subjectAttributes, serialNumber: try SecureRandom.bytes(count: 8).map { $0 & 0x7F | 1 },
                                   notBefore: notBefore, notAfter: notAfter)
        b.addBasicConstraints(ca: false)
        b.addKeyUsage([.digitalSignature])
        if let nonceExtension { b.addExtension(oid: NonceExtension.oid, critical: false, value: nonceExtension) }
        for e in extraExtensions { b.extensions.append(e) }
        return try b.sign(subjectPublicKey: deviceKey, issuerKey: intermediateKey, digest: .sha256)
    }
}

func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

/// DER of the nonce extension value SEQUENCE { [1] { OCTET STRING nonce } }.
func nonceExtensionDER(_ nonce: [UInt8]) -> [UInt8] {
    DERWriter.sequence([DERWriter.tlv(0xA1, DERWriter.octetString(nonce))])
}

/// Everything needed to build and verify a minted attestation; fields can be tampered with before `build()`.
struct MintedAttestation {
    static let appId = "ABCDE12345.com.example.gateway-test"
    static let validationTime: Int64 = 1_700_000_000 + 3600
    let ca: TestCA
    let deviceKey: ECPrivateKey
    var environment: AppAttestEnvironment = .development
    var clientDataHash: [UInt8] = SHA256.hash(Array("challenge".utf8))
    var counter: UInt32 = 0
    var appId = MintedAttestation.appId
    var trailing: [UInt8] = []  // appended to authData (e.g. an iOS 27 map)
    var flags: UInt8 = 0x40
    var x5cOverride: [[UInt8]]? = nil
    var nonceExtensionOverride: [UInt8]?? = nil  // .some(nil) = no extension
    var credentialIdOverride: [UInt8]? = nil
    var fmt = "apple-appattest"

    init(ca: TestCA, deviceKey: ECPrivateKey? = nil) throws {
        self.ca = ca
        self.deviceKey = try deviceKey ?? ECPrivateKey(generatingOn: .p256)
    }

    var keyId: [UInt8] { SHA256.hash(deviceKey.publicKeyPoint) }

    var coseKey: [UInt8] {
        let p = deviceKey.publicKeyPoint
        return TestCBOR.map([(.int(1), .int(2)), (.int(3), .int(-7)), (.int(-1), .int(1)),
                             (.int(-2), .bytes(Array(p[1..<33]))), (.int(-3), .bytes(Array(p[33..<65])))]).encoded
    }

    var authData: [UInt8] {
        let credentialId = credentialIdOverride ?? keyId
        return SHA256.hash(Array(appId.utf8)) + [flags] + withUnsafeBytes(of: counter.bigEndian, Array.init)
            + environment.aaguid + [UInt8(credentialId.count >> 8), UInt8(credentialId.count & 0xFF)] + credentialId + coseKey + trailing
    }

    func leaf() throws -> X509Certificate {
        let nonceExtension: [UInt8]? = nonceExtensionOverride ?? nonceExtensionDER(SHA256.hash(authData, clientDataHash))
        return try ca.leaf(deviceKey: deviceKey, nonceExtension: nonceExtension)
    }

    func object(x5c: [[UInt8]]? = nil, extraTopLevel: [(TestCBOR, TestCBOR)] = []) throws -> TestCBOR {
        let chain = try x5c ?? x5cOverride ?? [leaf().derBytes, ca.intermediate.derBytes]
        return .map([(.text("fmt"), .text(fmt)),
                     (.text("attStmt"), .map([(.text("x5c"), .array(chain.map { .bytes($0) })), (.text("receipt"), .bytes(Array("test-receipt".utf8)))])),
                     (.text("authData"), .bytes(authData))] + extraTopLevel)
    }

    func build() throws -> [UInt8] { try object().encoded }

    func verify(_ object: [UInt8]? = nil, policy: EnvironmentPolicy = .development, apps: [AppPolicy]? = nil,
                time: Int64 = MintedAttestation.validationTime, keyId: [UInt8]? = nil) throws -> AttestationDecision {
        let verifier = AttestationVerifier(trust: try ca.trust, apps: apps ?? [AppPolicy(appId: MintedAttestation.appId, environment: policy)])
        return verifier.verify(attestationObject: try object ?? build(), keyId: keyId ?? self.keyId, clientDataHash: clientDataHash, now: time)
    }
}

/// Mints an assertion: CBOR {signature, authenticatorData} with ECDSA-SHA256 over nonce = SHA256(authData || SHA256(clientData)).
func mintAssertion(key: ECPrivateKey, appId: String, counter: UInt32, clientData: [UInt8], flags: UInt8 = 0x40,
                   trailing: [UInt8] = [], signature override: (([UInt8], [UInt8]) throws -> [UInt8])? = nil) throws -> [UInt8] {
    let authData = SHA256.hash(Array(appId.utf8)) + [flags] + withUnsafeBytes(of: counter.bigEndian, Array.init) + trailing
    let nonce = SHA256.hash(authData, SHA256.hash(clientData))
    let signature = try override?(authData, nonce) ?? key.signature(for: nonce)
    return TestCBOR.map([(.text("signature"), .bytes(signature)), (.text("authenticatorData"), .bytes(authData))]).encoded
}

/// An iOS 27 authenticatorData extension map.
func ios27Map(category: [UInt8] = [1, 0, 0, 0], version: String = "1") -> [UInt8] {
    TestCBOR.map([(.text("apple_bundle_version_01"), .text(version)), (.text("apple_validation_category_01"), .bytes(category))]).encoded
}
