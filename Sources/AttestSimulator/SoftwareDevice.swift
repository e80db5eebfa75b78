import AppAttest
import AttestCrypto
import GatewayRules
import Glibc

/// A software App Attest device: one P-256 key (the Secure Enclave key of a real device) that
/// mints attestation objects under a `TestCA` and assertions, in Apple's exact formats.
///
/// - keyId = SHA-256 of the 65-byte uncompressed public point (what `generateKey` returns).
/// - The device keeps its signature counter: 0 after attestation, +1 per assertion (unless an
///   explicit counter is given). It is a value type: copies count independently.
/// - Key files are unencrypted PKCS#8 PEM with mode 0600, the format of ref_device.py `keygen`.
///
/// Formats reproduced (Apple: "Validating apps that connect to your server"; shared/vectors):
/// attestation `{"fmt": "apple-appattest", "attStmt": {"x5c": [leaf, intermediate], "receipt"},
/// "authData"}`; assertion `{"signature", "authenticatorData"}` with an ECDSA P-256 / SHA-256 DER
/// signature over the **message** nonce = SHA256(authenticatorData || SHA256(clientData)).
public struct SoftwareDevice: Sendable {
    /// The device's P-256 private key.
    public let privateKey: ECPrivateKey
    /// The public key.
    public let publicKey: P256PublicKey
    /// keyId = SHA-256 of `publicKey.x963Representation` (32 bytes).
    public let keyId: [UInt8]
    /// The last counter used (0 until the first assertion).
    public private(set) var counter: UInt32

    /// A device with a fresh key.
    /// - Throws: `CryptoError` when OpenSSL cannot generate a key.
    public init() throws {
        try self.init(privateKey: ECPrivateKey(generatingOn: .p256))
    }

    /// A device with `privateKey`, whose last counter is `counter`.
    /// - Throws: `SimulatorError.invalidKey` when the key is not on P-256.
    public init(privateKey: ECPrivateKey, counter: UInt32 = 0) throws {
        guard privateKey.curve == .p256, let publicKey = try? privateKey.publicKey() else {
            throw SimulatorError.invalidKey("App Attest keys are P-256; got \(privateKey.curve.rawValue)")
        }
        self.privateKey = privateKey
        self.publicKey = publicKey
        self.keyId = SHA256.hash(publicKey.x963Representation)
        self.counter = counter
    }

    /// A device from a PEM private key (PKCS#8 `PRIVATE KEY` or SEC 1 `EC PRIVATE KEY`).
    /// - Throws: `SimulatorError.invalidKey`.
    public init(pem: String, counter: UInt32 = 0) throws {
        let key: ECPrivateKey
        do { key = try ECPrivateKey(pem: pem) } catch { throw SimulatorError.invalidKey("\(error)") }
        try self.init(privateKey: key, counter: counter)
    }

    /// Loads the key file at `path` (e.g. written by `save(to:)` or ref_device.py `keygen`).
    /// - Throws: `SimulatorError.fileSystem` / `.invalidKey`.
    public static func load(from path: String, counter: UInt32 = 0) throws -> SoftwareDevice {
        try SoftwareDevice(pem: SecureFile.readText(path), counter: counter)
    }

    /// Writes the key as unencrypted PKCS#8 PEM to `path`, mode 0600, atomically.
    /// - Parameter replace: replace an existing file (default false: EEXIST is an error).
    /// - Throws: `SimulatorError.fileSystem`, `CryptoError`.
    public func save(to path: String, replace: Bool = false) throws {
        try SecureFile.write(Array(try privateKey.pkcs8PEM().utf8), to: path, mode: 0o600, replace: replace)
    }

    /// The 65-byte public key point `04 || X || Y`.
    public var publicKeyPoint: [UInt8] { publicKey.x963Representation }

    // MARK: - attestation

    /// Mints an attestation over a server challenge, with clientDataHash = SHA-256(challenge bytes)
    /// - the gateway's convention (DESIGN.md section 1).
    /// - Parameters:
    ///   - ca: the test CA whose intermediate signs the credential certificate.
    ///   - appId: "TEAMID.bundle.id" (rpIdHash = SHA-256 of it).
    ///   - environment: aaguid `appattestdevelop` or `appattest` + 7 zero bytes.
    ///   - challenge: the decoded challenge bytes.
    ///   - options: validity, iOS 27 map, receipt.
    /// - Throws: `SimulatorError.invalidArgument` for a bad validity window; `CryptoError`.
    public func mintAttestation(ca: TestCA, appId: String, environment: AppAttestEnvironment, challenge: [UInt8],
                                options: AttestationOptions = AttestationOptions()) throws -> MintedAttestation {
        try mintAttestation(ca: ca, appId: appId, environment: environment, clientDataHash: SHA256.hash(challenge), options: options)
    }

    /// Mints an attestation over an explicit clientDataHash (any length: Apple's own samples pass
    /// 21- or 24-byte raw challenges).
    ///
    /// authData = rpIdHash | 0x40 | counter 0 | aaguid | 0x0020 | keyId | COSE_Key [| iOS 27 map];
    /// nonce = SHA256(authData || clientDataHash) goes into the leaf's extension 1.2.840.113635.100.8.2.
    /// - Throws: as the challenge variant.
    public func mintAttestation(ca: TestCA, appId: String, environment: AppAttestEnvironment, clientDataHash: [UInt8],
                                options: AttestationOptions = AttestationOptions()) throws -> MintedAttestation {
        guard options.leafLifetime > 0 else { throw SimulatorError.invalidArgument("leaf lifetime must be positive") }
        let now = options.now ?? Int64(time(nil))
        let notBefore: Int64, notAfter: Int64
        if let start = options.notBefore {
            notBefore = start
            (notAfter, _) = start.addingReportingOverflow(options.leafLifetime)
        } else {
            notBefore = now - 3600
            (notAfter, _) = now.addingReportingOverflow(options.leafLifetime)
        }
        guard notAfter > notBefore else { throw SimulatorError.invalidArgument("leaf validity window overflows") }
        let authData = try AuthenticatorDataBuilder.attestation(appId: appId, environment: environment, publicKeyPoint: publicKeyPoint,
                                                                ios27Extension: options.ios27Extension)
        let nonce = SHA256.hash(authData, clientDataHash)
        let leaf = try ca.issueCredentialCertificate(publicKey: publicKey, nonce: nonce, notBefore: notBefore, notAfter: notAfter)
        let object: CBORValue = .map([
            CBORMapEntry(key: .text("fmt"), value: .text("apple-appattest")),
            CBORMapEntry(key: .text("attStmt"), value: .map([
                CBORMapEntry(key: .text("x5c"), value: .array([.bytes(leaf.derBytes), .bytes(ca.intermediate.derBytes)])),
                CBORMapEntry(key: .text("receipt"), value: .bytes(options.receipt)),
            ])),
            CBORMapEntry(key: .text("authData"), value: .bytes(authData)),
        ])
        return MintedAttestation(keyId: keyId, attestationObject: try CBORWriter.encode(object), clientDataHash: clientDataHash,
                                 authenticatorData: authData, nonce: nonce, credentialCertificate: leaf)
    }

    // MARK: - assertion

    /// Mints an assertion over arbitrary client data (what an app passes to `generateAssertion`
    /// after hashing), advancing the device counter.
    /// - Parameters:
    ///   - appId: "TEAMID.bundle.id".
    ///   - clientData: the bytes to bind; clientDataHash = SHA-256 of them.
    ///   - options: explicit counter, flags, iOS 27 map.
    /// - Throws: `SimulatorError.invalidArgument` when the counter would pass 2^32 - 1; `CryptoError`.
    public mutating func mintAssertion(appId: String, clientData: [UInt8], options: AssertionOptions = AssertionOptions()) throws -> MintedAssertion {
        try mintAssertion(appId: appId, clientData: clientData, clientDataHash: SHA256.hash(clientData), options: options)
    }

    /// Mints an assertion over a clientDataHash as an app passes it to `generateAssertion` (the client
    /// data itself stays with the app), advancing the device counter.
    /// - Parameters:
    ///   - appId: "TEAMID.bundle.id".
    ///   - clientDataHash: the hash to bind (any length; apps pass SHA-256 of their client data).
    ///   - options: explicit counter, flags, iOS 27 map.
    /// - Throws: as `mintAssertion(appId:clientData:options:)`. The result's `clientData` is empty.
    public mutating func mintAssertion(appId: String, clientDataHash: [UInt8], options: AssertionOptions = AssertionOptions()) throws -> MintedAssertion {
        try mintAssertion(appId: appId, clientData: [], clientDataHash: clientDataHash, options: options)
    }

    private mutating func mintAssertion(appId: String, clientData: [UInt8], clientDataHash: [UInt8], options: AssertionOptions) throws -> MintedAssertion {
        let used: UInt32
        if let explicit = options.counter {
            used = explicit
        } else {
            guard counter < UInt32.max else { throw SimulatorError.invalidArgument("the device counter is exhausted (2^32 - 1)") }
            used = counter + 1
        }
        let authData = AuthenticatorDataBuilder.assertion(appId: appId, counter: used, flags: options.flags,
                                                          ios27Extension: options.ios27Extension)
        let nonce = SHA256.hash(authData, clientDataHash)
        let signature = try privateKey.signature(for: nonce, digest: .sha256)  // the nonce is the message
        let object: CBORValue = .map([
            CBORMapEntry(key: .text("signature"), value: .bytes(signature)),
            CBORMapEntry(key: .text("authenticatorData"), value: .bytes(authData)),
        ])
        let encoded = try CBORWriter.encode(object)
        counter = max(counter, used)
        return MintedAssertion(keyId: keyId, assertionObject: encoded, clientData: clientData, clientDataHash: clientDataHash,
                               authenticatorData: authData, nonce: nonce, signature: signature, counter: used)
    }

    /// Mints an assertion over the gateway's client-data binding v1 (`ClientDataBinding.v1`):
    /// challenge, method, request-target exactly as sent, SHA-256 of the body, then each bound
    /// field as `name:value` (names used verbatim, in the route's order).
    /// - Parameters:
    ///   - appId: "TEAMID.bundle.id".
    ///   - challenge: the decoded challenge bytes.
    ///   - method: the request method, e.g. "POST".
    ///   - target: path and query exactly as sent on the request line (or `:path`).
    ///   - body: the request body (empty when there is none).
    ///   - boundFields: `(name, value)` header fields the route binds.
    ///   - options: explicit counter, flags, iOS 27 map.
    /// - Throws: as `mintAssertion(appId:clientData:options:)`, and `AppAttestError` for a field
    ///   longer than 2^32 - 1 bytes.
    public mutating func mintAssertion(appId: String, challenge: [UInt8], method: String, target: String, body: [UInt8] = [],
                                       boundFields: [(name: String, value: String)] = [],
                                       options: AssertionOptions = AssertionOptions()) throws -> MintedAssertion {
        let clientData = try ClientDataBinding.v1(challenge: challenge, method: method, target: target,
                                                  bodySHA256: SHA256.hash(body), boundFields: boundFields)
        return try mintAssertion(appId: appId, clientData: clientData, options: options)
    }
}
