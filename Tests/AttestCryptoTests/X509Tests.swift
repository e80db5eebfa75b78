import AttestCrypto
import Foundation
import GatewayTestSupport
import XCTest

final class X509Tests: XCTestCase {
    struct Chain {
        let rootKey: ECPrivateKey, root: X509Certificate
        let interKey: ECPrivateKey, inter: X509Certificate
        let leafKey: ECPrivateKey, leaf: X509Certificate
    }

    static let t0: Int64 = 1_600_000_000

    static func name(_ cn: String) -> [NameAttribute] { [NameAttribute("CN", cn), NameAttribute("O", "Test Org"), NameAttribute("C", "US")] }

    static func makeChain(rootName: String = "Test Root", leafExtensions: [X509Extension] = []) throws -> Chain {
        let rootKey = try ECPrivateKey(generatingOn: .p384)
        var r = CertificateBuilder(subject: name(rootName), issuer: name(rootName), serialNumber: [0x01], notBefore: t0, notAfter: t0 + 1000 * 86400)
        r.addBasicConstraints(ca: true)
        r.addSubjectKeyIdentifier(for: rootKey.publicKeyPoint)
        r.addKeyUsage([.keyCertSign, .cRLSign])
        let root = try r.sign(subjectPublicKey: rootKey, issuerKey: rootKey, digest: .sha384)
        let interKey = try ECPrivateKey(generatingOn: .p384)
        var i = CertificateBuilder(subject: name("Test CA 1"), issuer: name(rootName), serialNumber: [0x02], notBefore: t0, notAfter: t0 + 900 * 86400)
        i.addBasicConstraints(ca: true, pathLength: 0)
        i.addSubjectKeyIdentifier(for: interKey.publicKeyPoint)
        i.addAuthorityKeyIdentifier(issuerPublicKeyPoint: rootKey.publicKeyPoint)
        i.addKeyUsage([.keyCertSign, .cRLSign])
        let inter = try i.sign(subjectPublicKey: interKey, issuerKey: rootKey, digest: .sha384)
        let leafKey = try ECPrivateKey(generatingOn: .p256)
        var l = CertificateBuilder(subject: name("leaf"), issuer: name("Test CA 1"), serialNumber: [0x00, 0x93, 0x01], notBefore: t0 + 86400,
                                   notAfter: t0 + 4 * 86400)
        l.addBasicConstraints(ca: false)
        l.addKeyUsage([.digitalSignature])
        l.addExtendedKeyUsage(["1.2.840.113635.100.4.24"])
        l.addSubjectKeyIdentifier(for: leafKey.publicKeyPoint)
        l.addAuthorityKeyIdentifier(issuerPublicKeyPoint: interKey.publicKeyPoint)
        for e in leafExtensions { l.extensions.append(e) }
        let leaf = try l.sign(subjectPublicKey: leafKey, issuerKey: interKey, digest: .sha256)
        return Chain(rootKey: rootKey, root: root, interKey: interKey, inter: inter, leafKey: leafKey, leaf: leaf)
    }

    func testBuilderFieldsRoundTrip() throws {
        let custom = X509Extension(oid: "1.2.840.113635.100.8.2", isCritical: false, value: [0x30, 0x03, 0x04, 0x01, 0xAA])
        let chain = try Self.makeChain(leafExtensions: [custom])
        let leaf = chain.leaf
        XCTAssertEqual(leaf.subject, "C=US,O=Test Org,CN=leaf")
        XCTAssertEqual(leaf.issuer, "C=US,O=Test Org,CN=Test CA 1")
        XCTAssertEqual(leaf.subjectCommonName, "leaf")
        XCTAssertEqual(leaf.serialNumber, [0x93, 0x01])
        XCTAssertEqual(leaf.notBefore, Self.t0 + 86400)
        XCTAssertEqual(leaf.notAfter, Self.t0 + 4 * 86400)
        XCTAssertEqual(leaf.publicKeyCurve, .p256)
        XCTAssertEqual(leaf.publicKeyPoint, chain.leafKey.publicKeyPoint)
        XCTAssertEqual(try leaf.publicKeyP256().x963Representation, chain.leafKey.publicKeyPoint)
        XCTAssertEqual(chain.root.publicKeyCurve, .p384)
        XCTAssertThrowsError(try chain.root.publicKeyP256())
        XCTAssertEqual(try leaf.extensionValue(oid: "1.2.840.113635.100.8.2"), custom.value)
        XCTAssertEqual(leaf.extensions.map(\.oid), ["2.5.29.19", "2.5.29.15", "2.5.29.37", "2.5.29.14", "2.5.29.35", "1.2.840.113635.100.8.2"])
        XCTAssertEqual(leaf.extensions[0].isCritical, true)
        XCTAssertEqual(try leaf.extensionValue(oid: "2.5.29.14"), DERWriter.octetString(CertificateBuilder.keyIdentifier(chain.leafKey.publicKeyPoint)))
        XCTAssertNil(try leaf.extensionValue(oid: "1.2.3.4"))
        // DER and PEM parse back to the same certificate.
        XCTAssertEqual(try X509Certificate(der: leaf.derBytes).derBytes, leaf.derBytes)
        XCTAssertEqual(try X509Certificate(pem: leaf.pem).derBytes, leaf.derBytes)
        XCTAssertEqual(try X509Certificate.parseAll(pem: leaf.pem + chain.inter.pem).count, 2)
        XCTAssertThrowsError(try X509Certificate(der: leaf.derBytes + [0]))
        XCTAssertThrowsError(try X509Certificate(der: Array(leaf.derBytes.dropLast())))
        XCTAssertThrowsError(try X509Certificate(der: []))
        // openssl agrees with what we built.
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("x509-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        try chain.root.pem.write(to: dir.appendingPathComponent("root.pem"), atomically: true, encoding: .utf8)
        try chain.inter.pem.write(to: dir.appendingPathComponent("inter.pem"), atomically: true, encoding: .utf8)
        try leaf.pem.write(to: dir.appendingPathComponent("leaf.pem"), atomically: true, encoding: .utf8)
        let result = try ChildProcess.run("openssl", ["verify", "-x509_strict", "-attime", String(Self.t0 + 2 * 86400), "-CAfile",
                                                      dir.appendingPathComponent("root.pem").path, "-untrusted",
                                                      dir.appendingPathComponent("inter.pem").path, dir.appendingPathComponent("leaf.pem").path])
        XCTAssertEqual(result.status, 0, result.output)
    }

    func testDuplicateExtensionIsRefusedByLookup() throws {
        let e = X509Extension(oid: "1.2.840.113635.100.8.2", isCritical: false, value: [0x05, 0x00])
        let chain = try Self.makeChain(leafExtensions: [e, e])
        XCTAssertThrowsError(try chain.leaf.extensionValue(oid: e.oid))
    }

    func testChainVerificationPinnedAnchorsAndTime() throws {
        let chain = try Self.makeChain()
        let store = try X509TrustStore(anchors: [chain.root], strict: true)
        let inside = Self.t0 + 2 * 86400
        XCTAssertEqual(store.verify(leaf: chain.leaf, intermediates: [chain.inter], at: inside), .valid)
        // Outside the leaf's validity.
        XCTAssertFalse(store.verify(leaf: chain.leaf, intermediates: [chain.inter], at: Self.t0 + 5 * 86400).isValid)
        XCTAssertFalse(store.verify(leaf: chain.leaf, intermediates: [chain.inter], at: Self.t0).isValid)
        // The current time is not the injected time: this chain is long expired.
        XCTAssertFalse(store.verify(leaf: chain.leaf, intermediates: [chain.inter], at: Int64(Date().timeIntervalSince1970)).isValid)
        // Missing intermediate.
        XCTAssertFalse(store.verify(leaf: chain.leaf, intermediates: [], at: inside).isValid)
        // Another root (an attacker's look-alike with the same names) does not anchor it.
        let attacker = try Self.makeChain()
        let attackerStore = try X509TrustStore(anchors: [attacker.root])
        XCTAssertFalse(attackerStore.verify(leaf: chain.leaf, intermediates: [chain.inter], at: inside).isValid)
        XCTAssertFalse(store.verify(leaf: attacker.leaf, intermediates: [attacker.inter], at: inside).isValid)
        // The attacker's root sent along as an "intermediate" is never an anchor.
        XCTAssertFalse(store.verify(leaf: attacker.leaf, intermediates: [attacker.inter, attacker.root], at: inside).isValid)
        // No partial chains: pinning only the intermediate is not enough.
        let partial = try X509TrustStore(anchors: [chain.inter])
        XCTAssertFalse(partial.verify(leaf: chain.leaf, intermediates: [], at: inside).isValid)
        // An empty store trusts nothing (the system store is never consulted).
        let empty = try X509TrustStore(anchors: [])
        XCTAssertFalse(empty.verify(leaf: chain.leaf, intermediates: [chain.inter], at: inside).isValid)
        XCTAssertFalse(empty.verify(leaf: chain.root, intermediates: [], at: inside).isValid)
        if case .invalid(let code, let reason) = empty.verify(leaf: chain.leaf, intermediates: [chain.inter], at: inside) {
            XCTAssertNotEqual(code, 0)
            XCTAssertFalse(reason.isEmpty)
        }
    }

    func testSystemTrustStoreIsNotConsulted() throws {
        // A certificate from the system bundle verifies against itself in OpenSSL's default store,
        // but not in ours with no anchors.
        let bundle = "/etc/ssl/certs/ca-certificates.crt"
        guard let pem = try? String(contentsOfFile: bundle, encoding: .utf8),
              let first = try X509Certificate.parseAll(pem: pem).first(where: { $0.publicKeyCurve != nil || true }) else {
            throw SetupFailure("no system CA bundle at \(bundle) (ca-certificates: scripts/setup --tests installs it)")
        }
        let empty = try X509TrustStore(anchors: [], strict: false)
        XCTAssertFalse(empty.verify(leaf: first, intermediates: [], at: first.notBefore + 1).isValid)
    }
}
