import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest

/// Building and reloading a `TLSServerContext`: file errors name the file and OpenSSL's reason;
/// a reload swaps certificates for new handshakes only.
final class TLSServerContextTests: XCTestCase {
    let pki = TestPKI.shared

    func settings(_ pairs: [(chainPath: String, keyPath: String)]) -> TLSServerSettings {
        TLSServerSettings(certificates: pairs.map { .init(chainPath: $0.chainPath, keyPath: $0.keyPath) })
    }

    func client(alpn: [String] = ["http/1.1"]) throws -> TLSClientContext {
        try TLSClientContext(settings: TLSClientSettings(caPath: pki.root.certificate, alpn: alpn))
    }

    func error(_ settings: TLSServerSettings, file: StaticString = #filePath, line: UInt = #line) -> TLSContextError? {
        do {
            _ = try TLSServerContext(settings: settings)
            XCTFail("built", file: file, line: line)
            return nil
        } catch {
            return error
        }
    }

    func testGoodSettingsBuild() throws {
        let context = try TLSServerContext(settings: settings([pki.a, pki.b]))
        XCTAssertEqual(context.settings.certificates.count, 2)
        XCTAssertEqual(context.settings.minVersion, .tls12)
        XCTAssertEqual(context.settings.alpn, ["h2", "http/1.1"])
    }

    func testUnreadableFilesAreNamed() throws {
        let missing = pki.directory + "/nope.pem"
        guard case .unreadableFile(let path, let reason) = error(settings([(missing, pki.a.keyPath)])) else { return XCTFail() }
        XCTAssertEqual(path, missing)
        XCTAssertEqual(reason, "No such file or directory")
        XCTAssertEqual(TLSContextError.unreadableFile(path: path, reason: reason).description, "\(missing): cannot read: No such file or directory")
        guard case .unreadableFile(let keyPath, _) = error(settings([(pki.a.chainPath, missing)])) else { return XCTFail() }
        XCTAssertEqual(keyPath, missing)
        guard case .unreadableFile(_, let directoryReason) = error(settings([(pki.directory, pki.a.keyPath)])) else { return XCTFail() }
        XCTAssertEqual(directoryReason, "not a regular file")
    }

    func testNotPEMAndNoCertificate() throws {
        let garbage = try pki.file("garbage.pem", "this is not a certificate\n")
        guard case .notPEM(garbage, "no -----BEGIN line") = error(settings([(garbage, pki.a.keyPath)])) else { return XCTFail() }
        let broken = try pki.file("broken.pem", "-----BEGIN CERTIFICATE-----\n!!!!\n-----END CERTIFICATE-----\n")
        guard case .notPEM(broken, let reason) = error(settings([(broken, pki.a.keyPath)])) else { return XCTFail() }
        XCTAssertTrue(reason.hasPrefix("error:"), "OpenSSL's text: \(reason)")
        guard case .noCertificate(pki.a.keyPath) = error(settings([(pki.a.keyPath, pki.a.keyPath)])) else { return XCTFail() }
        guard case .notPEM(garbage, _) = error(settings([(pki.a.chainPath, garbage)])) else { return XCTFail() }
    }

    func testKeyProblems() throws {
        guard case .keyMismatch(pki.a.chainPath, pki.b.keyPath, let reason) = error(settings([(pki.a.chainPath, pki.b.keyPath)])) else {
            return XCTFail()
        }
        XCTAssertTrue(reason.contains("error:"), reason)
        XCTAssertTrue(TLSContextError.keyMismatch(chainPath: pki.a.chainPath, keyPath: pki.b.keyPath, reason: reason).description
            .contains("does not match the certificate in \(pki.a.chainPath)"))

        guard case .invalidKey(pki.a.chainPath, _) = error(settings([(pki.a.chainPath, pki.a.chainPath)])) else { return XCTFail() }

        let encrypted = pki.directory + "/encrypted.key"
        try TestPKI.openssl(["pkey", "-in", pki.a.keyPath, "-aes256", "-passout", "pass:secret", "-out", encrypted])
        guard case .invalidKey(encrypted, let encryptedReason) = error(settings([(pki.a.chainPath, encrypted)])) else { return XCTFail() }
        XCTAssertTrue(encryptedReason.contains("encrypted"))

        for (name, type) in [("p384", TestPKI.KeyType.p384), ("rsa1024", .rsa1024), ("ed25519", .ed25519)] {
            let leaf = try pki.leaf("unsupported-\(name)", names: ["\(name).test"], keyType: type)
            let pair = try pki.certificate(leaf)
            guard case .unsupportedKey(pair.keyPath, let why) = error(settings([pair])) else { return XCTFail(name) }
            XCTAssertFalse(why.isEmpty)
        }
    }

    func testInvalidSettings() throws {
        guard case .invalidSettings = error(TLSServerSettings(certificates: [])) else { return XCTFail() }
        var s = settings([pki.a])
        s.alpn = ["h2", String(repeating: "x", count: 256)]
        guard case .invalidSettings = error(s) else { return XCTFail() }
        s = settings([pki.a])
        s.sessionTimeoutSeconds = 0
        guard case .invalidSettings = error(s) else { return XCTFail() }
        s = settings([pki.a])
        s.ticketKeyRotationSeconds = 0
        guard case .invalidSettings = error(s) else { return XCTFail() }
        s = settings([pki.a])
        s.sessionCacheSize = -1
        guard case .invalidSettings = error(s) else { return XCTFail() }
    }

    func testReloadSwapsCertificatesForNewHandshakesOnly() throws {
        let context = try TLSServerContext(settings: settings([pki.a]))
        let client = try client()
        let before = try TLSPair(server: context, client: client, serverName: "a.test")
        before.handshakeSucceeds()
        let refusedBefore = try TLSPair(server: context, client: client, serverName: "b.test")
        XCTAssertTrue(refusedBefore.handshake().client.failed(containing: "hostname mismatch"))

        var next = settings([pki.b])
        next.alpn = ["http/1.1"]
        try context.reload(next)
        XCTAssertEqual(context.settings, next)

        let after = try TLSPair(server: context, client: client, serverName: "b.test")
        after.handshakeSucceeds()
        XCTAssertEqual(after.client.peerCertificateSubject, "CN=b.test")
        let oldName = try TLSPair(server: context, client: client, serverName: "a.test")
        XCTAssertTrue(oldName.handshake().client.failed(containing: "hostname mismatch"))

        // The connection made before the reload still works, both ways, with its certificate.
        before.ping()
        XCTAssertEqual(before.client.peerCertificateSubject, "CN=a.test")
        let big = before.exchange(toServer: [UInt8](repeating: 1, count: 200_000), toClient: [UInt8](repeating: 2, count: 200_000))
        XCTAssertEqual(big.atServer.count, 200_000)
        XCTAssertEqual(big.atClient.count, 200_000)
    }

    func testAFailedReloadChangesNothing() throws {
        let context = try TLSServerContext(settings: settings([pki.a]))
        XCTAssertThrowsError(try context.reload(settings([pki.b, (pki.a.chainPath, pki.b.keyPath)]))) { error in
            guard case TLSContextError.keyMismatch = error else { return XCTFail("\(error)") }
        }
        XCTAssertEqual(context.settings.certificates.first?.chainPath, pki.a.chainPath)
        let pair = try TLSPair(server: context, client: try client(), serverName: "a.test")
        pair.handshakeSucceeds()
    }

    /// A reload of several listeners prepares every generation (every file read and checked) before it
    /// installs any: `prepare` changes nothing, even when the files change or vanish afterwards, and
    /// `install` then serves what was read. (Before, the files were checked, then read again at the
    /// swap: a file that broke in between left earlier listeners swapped and the reload reported as
    /// failed.)
    func testPrepareChangesNothingAndInstallServesWhatWasRead() throws {
        let context = try TLSServerContext(settings: settings([pki.a]))
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("prepare-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let chain = directory.appendingPathComponent("chain.pem").path, key = directory.appendingPathComponent("key.pem").path
        try FileManager.default.copyItem(atPath: pki.b.chainPath, toPath: chain)
        try FileManager.default.copyItem(atPath: pki.b.keyPath, toPath: key)
        let prepared = try context.prepare(settings([(chain, key)]))
        XCTAssertEqual(context.settings.certificates.first?.chainPath, pki.a.chainPath, "prepare swaps nothing")
        try TLSPair(server: context, client: try client(), serverName: "a.test").handshakeSucceeds()
        try FileManager.default.removeItem(atPath: chain)
        try FileManager.default.removeItem(atPath: key)
        context.install(prepared)
        XCTAssertEqual(context.settings.certificates.first?.chainPath, chain)
        let after = try TLSPair(server: context, client: try client(), serverName: "b.test")
        after.handshakeSucceeds()
        XCTAssertEqual(after.client.peerCertificateSubject, "CN=b.test", "served from what prepare read")
    }

    func testKeyFileWithECParametersBlockAndChainFileWithExtraBlocks() throws {
        // `openssl ecparam -genkey` writes EC PARAMETERS before the key; a chain file may hold a key too.
        let key = try String(contentsOfFile: pki.a.keyPath, encoding: .utf8)
        XCTAssertTrue(key.contains("BEGIN EC PARAMETERS"))
        let combined = try pki.file("combined.pem", try String(contentsOfFile: pki.a.chainPath, encoding: .utf8) + key)
        let context = try TLSServerContext(settings: settings([(combined, combined)]))
        let pair = try TLSPair(server: context, client: try client(), serverName: "a.test")
        pair.handshakeSucceeds()
    }
}
