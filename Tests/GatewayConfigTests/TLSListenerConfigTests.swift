import GatewayRules
import XCTest
@testable import GatewayConfig

/// `listen` items as mappings `{address, tls}`: certificates, min_version, mixing with plain
/// addresses, the file references handed to the TLS layer, and `timeouts.tls_handshake`.
final class TLSListenerConfigTests: XCTestCase {
    /// `ConfigTestHelpers.minimal()` with its `listen` line replaced by `listen` (starting at line 1).
    private func config(listen: String, extra: String = "") -> String {
        ConfigTestHelpers.minimal(extra: extra).replacingOccurrences(of: "listen: 127.0.0.1:8080", with: listen)
    }

    private let api = TLSCertificatePair(chain: "/srv/gw/tls/api.pem", key: "/srv/gw/tls/api.key")

    // MARK: passing cases

    func testMappingListenerWithTwoCertificates() throws {
        let loaded = try XCTUnwrap(loadOK(config(listen: """
        listen:
          - address: 0.0.0.0:8443
            tls:
              certificates:
                - chain: tls/api.pem
                  key: tls/api.key
                - {chain: /etc/tls/www.pem, key: ../keys/www.key}
        """), base: "/srv/gw"))
        let www = TLSCertificatePair(chain: "/etc/tls/www.pem", key: "/srv/keys/www.key")
        let listener = ListenerConfiguration(address: .ip(host: "0.0.0.0", port: 8443),
                                             tls: TLSListenerConfiguration(certificates: [api, www], minVersion: .tls12))
        XCTAssertEqual(loaded.configuration.listen, [listener])
        XCTAssertEqual(loaded.configuration.listen[0].tls?.defaultCertificate, api)
        XCTAssertEqual(loaded.configuration.listen[0].description, "0.0.0.0:8443 (TLS 1.2+, 2 certificates)")
        XCTAssertEqual(loaded.configuration.listenAddresses, [.ip(host: "0.0.0.0", port: 8443)])
        XCTAssertEqual(loaded.configuration.timeouts.tlsHandshake, .seconds(10))
        // Every pair, with the key path and position of its item, for the TLS layer's file checks.
        XCTAssertEqual(loaded.tlsFiles, [
            TLSFileReference(path: "listen[0].tls.certificates[0]", mark: SourceMark(line: 5, column: 11), files: .certificate(api)),
            TLSFileReference(path: "listen[0].tls.certificates[1]", mark: SourceMark(line: 7, column: 11), files: .certificate(www)),
        ])
        XCTAssertEqual(loaded.tlsFiles[1].filePaths, ["/etc/tls/www.pem", "/srv/keys/www.key"])
        XCTAssertEqual(loaded.tlsFiles[0].issue(.error, "no such file").description,
                       "listen[0].tls.certificates[0]: no such file (line 5, column 11)")
        XCTAssertEqual(loaded.warnings.map(\.path), ["store"], "\(loaded.warnings)")
    }

    func testStringsAndMappingsMix() throws {
        let loaded = try XCTUnwrap(loadOK(config(listen: """
        listen:
          - 127.0.0.1:8080
          - address: '[::]:8443'
            tls:
              certificates: [{chain: tls/api.pem, key: tls/api.key}]
              min_version: "1.3"
          - address: unix:run/gw.sock
        """), base: "/srv/gw"))
        XCTAssertEqual(loaded.configuration.listen, [
            .plain(.ip(host: "127.0.0.1", port: 8080)),
            ListenerConfiguration(address: .ip(host: "::", port: 8443), tls: TLSListenerConfiguration(certificates: [api], minVersion: .tls13)),
            .plain(.unix(path: "/srv/gw/run/gw.sock")),
        ])
        XCTAssertEqual(loaded.configuration.listen.map(\.isTLS), [false, true, false])
        XCTAssertEqual(loaded.tlsFiles.map(\.path), ["listen[1].tls.certificates[0]"])
    }

    func testMinVersionSpellings() {
        func version(_ text: String) -> TLSVersion? {
            loadOK(config(listen: "listen: [{address: 0.0.0.0:8443, tls: {certificates: [{chain: a.pem, key: a.key}], min_version: \(text)}}]"))?
                .configuration.listen[0].tls?.minVersion
        }
        XCTAssertEqual(version("1.2"), .tls12)
        XCTAssertEqual(version("\"1.2\""), .tls12)
        XCTAssertEqual(version("1.3"), .tls13)
        XCTAssertEqual(version("'1.3'"), .tls13)
        XCTAssertEqual(version("~"), .tls12)
        XCTAssertLessThan(TLSVersion.tls12, .tls13)
    }

    func testSingleMappingWithoutListAndPathsOfIt() throws {
        let loaded = try XCTUnwrap(loadOK(config(listen: "listen: {address: 0.0.0.0:8443, tls: {certificates: [{chain: both.pem, key: both.pem}]}}")))
        XCTAssertEqual(loaded.configuration.listen[0].tls?.certificates, [TLSCertificatePair(chain: "/tmp/both.pem", key: "/tmp/both.pem")])
        XCTAssertEqual(loaded.tlsFiles.map(\.path), ["listen.tls.certificates[0]"])
        XCTAssertEqual(loaded.tlsFiles[0].filePaths, ["/tmp/both.pem"])
        // A mapping without tls is a plain listener.
        XCTAssertEqual(loadOK(config(listen: "listen: [{address: 127.0.0.1:8080}]"))?.configuration.listen, [.plain(.ip(host: "127.0.0.1", port: 8080))])
    }

    func testTLSHandshakeTimeout() {
        let tls = "listen: [{address: 0.0.0.0:8443, tls: {certificates: [{chain: a.pem, key: a.key}]}}]"
        let loaded = loadOK(config(listen: tls, extra: "timeouts: {tls_handshake: 2500ms}"))
        XCTAssertEqual(loaded?.configuration.timeouts.tlsHandshake, .milliseconds(2500))
        XCTAssertEqual(loaded?.warnings.map(\.path), ["store"])
        XCTAssertEqual(errorLines(config(listen: tls, extra: "timeouts: {tls_handshake: 50ms}")),
                       ["timeouts.tls_handshake: must be from 100ms to 5m, got 50ms (line 10, column 27)"])
        XCTAssertEqual(errorLines(config(listen: tls, extra: "timeouts: {tls_handshake: 6m}")),
                       ["timeouts.tls_handshake: must be from 100ms to 5m, got 6m (line 10, column 27)"])
        // Set without any TLS listener: loads, with a warning.
        let plain = loadOK(ConfigTestHelpers.minimal(extra: "timeouts: {tls_handshake: 5s}"))
        XCTAssertEqual(plain?.warnings.first { $0.path == "timeouts.tls_handshake" }?.description,
                       "timeouts.tls_handshake: has no effect: no listener has tls (line 10, column 27)")
    }

    // MARK: failing cases

    func testMissingCertificates() {
        XCTAssertEqual(errorLines(config(listen: """
        listen:
          - address: 0.0.0.0:8443
            tls:
              min_version: "1.3"
        """)), ["listen[0].tls.certificates: required key is missing: list at least one {chain, key} pair of PEM files (chosen by SNI, the first is the default) (line 4, column 7)"])
        XCTAssertEqual(errorLines(config(listen: "listen: [{address: 0.0.0.0:8443, tls: {}}]")),
                       ["listen[0].tls.certificates: required key is missing: list at least one {chain, key} pair of PEM files (chosen by SNI, the first is the default) (line 1, column 39)"])
    }

    func testEmptyCertificateList() {
        XCTAssertEqual(errorLines(config(listen: """
        listen:
          - address: 0.0.0.0:8443
            tls:
              certificates: []
        """)), ["listen[0].tls.certificates: needs at least one {chain, key} pair: the first is the certificate presented when SNI selects no other (line 4, column 21)"])
        XCTAssertEqual(errorLines(config(listen: "listen: [{address: 0.0.0.0:8443, tls: {certificates: tls/api.pem}}]")),
                       ["listen[0].tls.certificates: expected a list of {chain, key} pairs of PEM files, got \"tls/api.pem\" (line 1, column 54)"])
    }

    func testCertificateWithoutKeyOrChain() {
        XCTAssertEqual(errorLines(config(listen: """
        listen:
          - address: 0.0.0.0:8443
            tls:
              certificates:
                - chain: tls/api.pem
                - key: tls/www.key
                - {chain: '', key: tls/x.key}
                - tls/y.pem
        """)), [
            "listen[0].tls.certificates[0].key: required key is missing (PEM file with the private key of chain) (line 5, column 11)",
            "listen[0].tls.certificates[1].chain: required key is missing (PEM file: the certificate first, then its intermediates) (line 6, column 11)",
            "listen[0].tls.certificates[2].chain: expected a PEM certificate chain file path, got an empty string (line 7, column 19)",
            "listen[0].tls.certificates[3]: expected a mapping {chain, key} of PEM file paths, got \"tls/y.pem\" (line 8, column 11)",
        ])
    }

    func testSameChainTwice() {
        XCTAssertEqual(errorLines(config(listen: """
        listen:
          - address: 0.0.0.0:8443
            tls:
              certificates:
                - {chain: tls/api.pem, key: tls/api.key}
                - {chain: ./tls/api.pem, key: tls/other.key}
        """)), ["listen[0].tls.certificates[1].chain: /tmp/tls/api.pem is also listen[0].tls.certificates[0].chain (line 6, column 19)"])
    }

    func testMinVersionBelow12IsRefused() {
        func lines(_ text: String) -> [String] {
            errorLines(config(listen: "listen: [{address: 0.0.0.0:8443, tls: {certificates: [{chain: a.pem, key: a.key}], min_version: \(text)}}]"))
        }
        XCTAssertEqual(lines("\"1.1\""), ["listen[0].tls.min_version: \"1.1\" is refused: TLS 1.0 and 1.1 are deprecated (RFC 8996) and SSL is broken; write \"1.2\" (the default) or \"1.3\" (line 1, column 97)"])
        XCTAssertEqual(lines("1.0"), ["listen[0].tls.min_version: \"1.0\" is refused: TLS 1.0 and 1.1 are deprecated (RFC 8996) and SSL is broken; write \"1.2\" (the default) or \"1.3\" (line 1, column 97)"])
        XCTAssertEqual(lines("TLSv1.1"), ["listen[0].tls.min_version: \"TLSv1.1\" is refused: TLS 1.0 and 1.1 are deprecated (RFC 8996) and SSL is broken; write \"1.2\" (the default) or \"1.3\" (line 1, column 97)"])
        XCTAssertEqual(lines("TLSv1.3"), ["listen[0].tls.min_version: write the version number only: \"1.3\", got \"TLSv1.3\" (line 1, column 97)"])
        XCTAssertEqual(lines("2"), ["listen[0].tls.min_version: expected \"1.2\" (the default) or \"1.3\", got \"2\" (line 1, column 97)"])
        XCTAssertEqual(lines("[1.2]"), ["listen[0].tls.min_version: expected \"1.2\" (the default) or \"1.3\", got a list (line 1, column 97)"])
    }

    func testUnknownKeysWithSuggestions() {
        XCTAssertEqual(errorLines(config(listen: """
        listen:
          - adress: 0.0.0.0:8443
            tls:
              certificate:
                - {chain: a.pem, key: a.key, cert: a.crt}
              min-version: "1.3"
              alpn: [h2]
        """)), [
            "listen[0].adress: unknown key; did you mean address? (line 2, column 5)",
            "listen[0].tls.certificate: unknown key; did you mean certificates? (line 4, column 7)",
            "listen[0].tls.min-version: unknown key; did you mean min_version? (line 6, column 7)",
            "listen[0].tls.alpn: unknown key (known keys: certificates, min_version) (line 7, column 7)",
            // One mistake, one message: no "address missing" or "certificates missing" beside them.
        ])
        XCTAssertEqual(errorLines(config(listen: "listen: [{address: 0.0.0.0:8443, tls: {certificates: [{chain: a.pem, key: a.key, cert: a.crt}]}}]")),
                       ["listen[0].tls.certificates[0].cert: unknown key (known keys: chain, key) (line 1, column 82)"])
        // TLS keys written where they do not belong say where they go.
        XCTAssertEqual(errorLines(config(listen: "listen: [{address: 0.0.0.0:8443, certificates: []}]")),
                       ["listen[0].certificates: unknown key here; certificates is a key of listen[].tls (line 1, column 34)"])
    }

    func testWrongShapesAndAddressProblems() {
        XCTAssertEqual(errorLines(config(listen: """
        listen:
          - [0.0.0.0:8443]
          - tls: {certificates: [{chain: a.pem, key: a.key}]}
          - address: localhost:8443
          - {address: 0.0.0.0:8444, tls: true}
        """)), [
            "listen[0]: expected an address like 127.0.0.1:8080 or a mapping {address, tls}, got a list (line 2, column 5)",
            "listen[1].address: required key is missing (e.g. address: 0.0.0.0:8443) (line 3, column 5)",
            "listen[2].address: listeners take an IP address, not a host name (\"localhost\"): write 127.0.0.1:8443 or [::1]:8443 (line 4, column 14)",
            "listen[3].tls: expected a mapping {certificates, min_version}, got \"true\" (line 5, column 34)",
        ])
    }

    func testOverlapBetweenStringAndMapping() {
        XCTAssertEqual(errorLines(config(listen: """
        listen:
          - 0.0.0.0:8443
          - address: 127.0.0.1:8443
            tls: {certificates: [{chain: a.pem, key: a.key}]}
        """)), ["listen[1].address: 127.0.0.1:8443 overlaps listen[0] (0.0.0.0:8443) (line 3, column 14)"])
        // admin against a TLS listener's address.
        XCTAssertEqual(errorLines(config(listen: "listen: [{address: 127.0.0.1:8443, tls: {certificates: [{chain: a.pem, key: a.key}]}}]", extra: "admin: 127.0.0.1:8443")),
                       ["admin: 127.0.0.1:8443 overlaps listen[0] (127.0.0.1:8443): the admin endpoints need their own address (line 10, column 8)"])
    }
}
