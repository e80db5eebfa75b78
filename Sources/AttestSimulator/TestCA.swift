import AppAttest
import AttestCrypto

/// A TEST App Attest certificate authority: a P-384 root and a P-384 intermediate shaped like
/// Apple's "Apple App Attestation Root CA" and "Apple App Attestation CA 1", but named TEST and
/// "(not Apple)". Trust its root only in tests and quickstarts (`trustAnchors()`).
///
/// - root: self-signed, ECDSA-SHA384, basicConstraints CA (critical), subjectKeyIdentifier,
///   keyUsage keyCertSign + cRLSign (critical); 2020-01-01 .. 2045-01-01 by default.
/// - intermediate: issued by the root with ECDSA-SHA384, CA with pathLenConstraint 0,
///   authorityKeyIdentifier, subjectKeyIdentifier, keyUsage; 2020-01-01 .. 2040-01-01.
/// - names: `CN=..., O=TEST App Attest CA (not Apple), ST=California` (Apple's attribute order).
///
/// On disk it uses **the same folder layout as shared/tools/ref_device.py**: `root.pem`,
/// `root.key.pem`, `intermediate.pem`, `intermediate.key.pem`, keys as unencrypted PKCS#8 PEM with
/// mode 0600 - a CA made by either tool is usable by the other. Thread-safe (immutable).
public struct TestCA: Sendable {
    /// File name of the root certificate (PEM).
    public static let rootCertificateFile = "root.pem"
    /// File name of the root private key (PKCS#8 PEM, 0600).
    public static let rootKeyFile = "root.key.pem"
    /// File name of the intermediate certificate (PEM).
    public static let intermediateCertificateFile = "intermediate.pem"
    /// File name of the intermediate private key (PKCS#8 PEM, 0600).
    public static let intermediateKeyFile = "intermediate.key.pem"
    /// The four files of a CA folder, in ref_device.py's order.
    public static let fileNames = [rootCertificateFile, rootKeyFile, intermediateCertificateFile, intermediateKeyFile]

    /// Organization of every certificate this CA makes (leaves included).
    public static let organization = "TEST App Attest CA (not Apple)"
    /// Common name of the root.
    public static let rootCommonName = "TEST App Attestation Root CA"
    /// Common name of the intermediate (Apple's is "Apple App Attestation CA 1").
    public static let intermediateCommonName = "TEST App Attestation CA 1"
    /// Organizational unit of credential (leaf) certificates, as Apple's.
    public static let credentialOrganizationalUnit = "AAA Certification"
    /// The App Attest nonce extension OID (leaf certificates).
    public static let nonceExtensionOID = "1.2.840.113635.100.8.2"
    /// The App Attest extended key usage OID carried by real 2024+ leaves.
    public static let appAttestExtendedKeyUsageOID = "1.2.840.113635.100.4.24"

    /// The self-signed root certificate.
    public let root: X509Certificate
    /// The root's P-384 private key.
    public let rootKey: ECPrivateKey
    /// The intermediate certificate ("... App Attestation CA 1").
    public let intermediate: X509Certificate
    /// The intermediate's private key (signs credential certificates with ECDSA-SHA256).
    public let intermediateKey: ECPrivateKey

    /// A CA from its parts, checked for consistency.
    /// - Throws: `SimulatorError.invalidCA` when a key does not match its certificate or the
    ///   intermediate does not verify under the root (at its own notBefore).
    public init(root: X509Certificate, rootKey: ECPrivateKey, intermediate: X509Certificate, intermediateKey: ECPrivateKey) throws {
        guard root.publicKeyPoint == rootKey.publicKeyPoint else {
            throw SimulatorError.invalidCA("the root key does not match the root certificate")
        }
        guard intermediate.publicKeyPoint == intermediateKey.publicKeyPoint else {
            throw SimulatorError.invalidCA("the intermediate key does not match the intermediate certificate")
        }
        let store: X509TrustStore
        do { store = try X509TrustStore(anchors: [root], strict: false) } catch { throw SimulatorError.invalidCA("\(error)") }
        let at = max(root.notBefore, intermediate.notBefore)
        if case .invalid(_, let reason) = store.verify(leaf: intermediate, intermediates: [], at: at) {
            throw SimulatorError.invalidCA("the intermediate does not verify under the root: \(reason)")
        }
        self.root = root
        self.rootKey = rootKey
        self.intermediate = intermediate
        self.intermediateKey = intermediateKey
    }

    /// Generates a new CA in memory (fresh P-384 keys from OpenSSL's DRBG).
    /// - Parameters:
    ///   - notBefore: start of both certificates, seconds since the epoch (default 2020-01-01T00:00:00Z).
    ///   - rootNotAfter: end of the root (default 2045-01-01T00:00:00Z).
    ///   - intermediateNotAfter: end of the intermediate (default 2040-01-01T00:00:00Z).
    /// - Throws: `SimulatorError.invalidArgument` for an empty validity window; `CryptoError` from OpenSSL.
    public static func generate(notBefore: Int64 = CivilTime.secondsSinceEpoch(year: 2020, month: 1, day: 1, hour: 0, minute: 0, second: 0),
                                rootNotAfter: Int64 = CivilTime.secondsSinceEpoch(year: 2045, month: 1, day: 1, hour: 0, minute: 0, second: 0),
                                intermediateNotAfter: Int64 = CivilTime.secondsSinceEpoch(year: 2040, month: 1, day: 1, hour: 0, minute: 0, second: 0)) throws -> TestCA {
        guard notBefore < rootNotAfter, notBefore < intermediateNotAfter else {
            throw SimulatorError.invalidArgument("CA validity must end after it starts")
        }
        let rootKey = try ECPrivateKey(generatingOn: .p384)
        let rootName = name(commonName: rootCommonName)
        var rootBuilder = CertificateBuilder(subject: rootName, issuer: rootName, serialNumber: try serialNumber(),
                                             notBefore: notBefore, notAfter: rootNotAfter)
        rootBuilder.addBasicConstraints(ca: true, pathLength: nil)
        rootBuilder.addSubjectKeyIdentifier(for: rootKey.publicKeyPoint)
        rootBuilder.addKeyUsage([.keyCertSign, .cRLSign])
        let root = try rootBuilder.sign(subjectPublicKey: rootKey, issuerKey: rootKey, digest: .sha384)

        let intermediateKey = try ECPrivateKey(generatingOn: .p384)
        var builder = CertificateBuilder(subject: name(commonName: intermediateCommonName), issuer: root.subjectAttributes,
                                         serialNumber: try serialNumber(), notBefore: notBefore, notAfter: intermediateNotAfter)
        builder.addBasicConstraints(ca: true, pathLength: 0)
        builder.addAuthorityKeyIdentifier(issuerPublicKeyPoint: rootKey.publicKeyPoint)
        builder.addSubjectKeyIdentifier(for: intermediateKey.publicKeyPoint)
        builder.addKeyUsage([.keyCertSign, .cRLSign])
        let intermediate = try builder.sign(subjectPublicKey: intermediateKey, issuerKey: rootKey, digest: .sha384)
        return try TestCA(root: root, rootKey: rootKey, intermediate: intermediate, intermediateKey: intermediateKey)
    }

    /// Loads the CA from `directory` (all four files must be present).
    /// - Throws: `SimulatorError.incompleteCA` naming missing files, `.invalidCA` for unreadable or
    ///   inconsistent material, `.fileSystem` for I/O errors.
    public static func load(directory: String) throws -> TestCA {
        let paths = fileNames.map { join(directory, $0) }
        let missing = zip(fileNames, paths).filter { !SecureFile.exists($0.1) }.map(\.0)
        guard missing.isEmpty else { throw SimulatorError.incompleteCA(directory: directory, missing: missing) }
        func certificate(_ path: String) throws -> X509Certificate {
            do { return try X509Certificate(pem: try SecureFile.readText(path)) } catch let error as SimulatorError { throw error } catch {
                throw SimulatorError.invalidCA("\(path): \(error)")
            }
        }
        func key(_ path: String) throws -> ECPrivateKey {
            do { return try ECPrivateKey(pem: try SecureFile.readText(path)) } catch let error as SimulatorError { throw error } catch {
                throw SimulatorError.invalidCA("\(path): \(error)")
            }
        }
        return try TestCA(root: certificate(paths[0]), rootKey: key(paths[1]),
                          intermediate: certificate(paths[2]), intermediateKey: key(paths[3]))
    }

    /// Loads the CA from `directory`, or - when none of the four files exists - generates one and
    /// writes it there (creating the folder). Same behaviour as ref_device.py `load_or_create_ca`.
    /// - Throws: as `load` (a folder with only some of the files is an error, never overwritten),
    ///   or as `write`.
    public static func loadOrCreate(directory: String) throws -> TestCA {
        if fileNames.contains(where: { SecureFile.exists(join(directory, $0)) }) {
            return try load(directory: directory)
        }
        let ca = try generate()
        try ca.write(to: directory)
        return ca
    }

    /// Writes the four files into `directory` (created if needed): certificates 0644, keys 0600.
    /// - Throws: `SimulatorError.fileSystem`; existing files are never replaced (EEXIST).
    public func write(to directory: String) throws {
        try SecureFile.makeDirectories(directory)
        for name in Self.fileNames where SecureFile.exists(Self.join(directory, name)) {
            throw SimulatorError.fileSystem(path: Self.join(directory, name), detail: "already exists")
        }
        try SecureFile.write(Array(try rootKey.pkcs8PEM().utf8), to: Self.join(directory, Self.rootKeyFile), mode: 0o600, replace: false)
        try SecureFile.write(Array(try intermediateKey.pkcs8PEM().utf8), to: Self.join(directory, Self.intermediateKeyFile), mode: 0o600, replace: false)
        try SecureFile.write(Array(root.pem.utf8), to: Self.join(directory, Self.rootCertificateFile), mode: 0o644, replace: false)
        try SecureFile.write(Array(intermediate.pem.utf8), to: Self.join(directory, Self.intermediateCertificateFile), mode: 0o644, replace: false)
    }

    /// Verifier anchors that pin **this CA's root** for attestation chains instead of Apple's App
    /// Attestation Root CA (Apple Root CA - G3 stays pinned for receipts).
    public func trustAnchors() throws -> TrustAnchors {
        try TrustAnchors.apple.replacing(appAttestRoots: [root])
    }

    /// Issues a credential (leaf) certificate like Apple's: P-256 subject key, signed ECDSA-SHA256
    /// by the intermediate; subject `CN=<hex keyId>, OU=AAA Certification, O=..., ST=California`;
    /// extensions basicConstraints CA:FALSE (critical), keyUsage digitalSignature, contentCommitment,
    /// keyEncipherment, dataEncipherment (critical), extKeyUsage 1.2.840.113635.100.4.24, and the
    /// nonce extension 1.2.840.113635.100.8.2 = `SEQUENCE { [1] { OCTET STRING nonce } }`.
    /// - Parameters:
    ///   - publicKey: the device key.
    ///   - nonce: SHA256(authenticatorData || clientDataHash), 32 bytes.
    ///   - notBefore: seconds since the epoch.
    ///   - notAfter: seconds since the epoch, after `notBefore`.
    /// - Throws: `SimulatorError.invalidArgument` for a nonce that is not 32 bytes or an empty window.
    public func issueCredentialCertificate(publicKey: P256PublicKey, nonce: [UInt8], notBefore: Int64, notAfter: Int64) throws -> X509Certificate {
        guard nonce.count == 32 else { throw SimulatorError.invalidArgument("nonce must be 32 bytes") }
        guard notBefore < notAfter else { throw SimulatorError.invalidArgument("leaf validity must end after it starts") }
        let keyIdHex = SHA256.hash(publicKey.x963Representation).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
        var builder = CertificateBuilder(subject: Self.name(commonName: keyIdHex, unit: Self.credentialOrganizationalUnit),
                                         issuer: intermediate.subjectAttributes, serialNumber: try Self.serialNumber(),
                                         notBefore: notBefore, notAfter: notAfter)
        builder.addBasicConstraints(ca: false)
        builder.addKeyUsage([.digitalSignature, .contentCommitment, .keyEncipherment, .dataEncipherment])
        builder.addExtendedKeyUsage([Self.appAttestExtendedKeyUsageOID])
        let nonceValue = DERWriter.sequence([DERWriter.tlv(0xA1, DERWriter.octetString(nonce))])
        builder.addExtension(oid: Self.nonceExtensionOID, critical: false, value: nonceValue)
        return try builder.sign(subjectPublicKey: publicKey, issuerKey: intermediateKey, digest: .sha256)
    }

    /// `CN [, OU], O, ST` - the attribute order of Apple's App Attest certificates.
    static func name(commonName: String, unit: String? = nil) -> [NameAttribute] {
        var attributes = [NameAttribute("CN", commonName)]
        if let unit { attributes.append(NameAttribute("OU", unit)) }
        attributes.append(NameAttribute("O", organization))
        attributes.append(NameAttribute("ST", "California"))
        return attributes
    }

    /// A positive 16-byte random serial number (RFC 5280: at most 20 bytes, non-negative).
    static func serialNumber() throws -> [UInt8] {
        var serial = try SecureRandom.bytes(count: 16)
        serial[0] = serial[0] & 0x3F | 0x40
        return serial
    }

    static func join(_ directory: String, _ name: String) -> String {
        directory.isEmpty ? name : (directory.hasSuffix("/") ? directory + name : directory + "/" + name)
    }
}
