import XCTest
@testable import GatewayConfig

/// `https://` upstreams and `upstreams.NAME.tls`: defaults, ca / server_name / verify, the
/// verify: false warning, and tls where it does not apply.
final class UpstreamTLSConfigTests: XCTestCase {
    /// `ConfigTestHelpers.minimal()` with upstream `app` written as `upstream` (from line 6 on).
    private func config(_ upstream: String) -> String {
        ConfigTestHelpers.minimal().replacingOccurrences(of: "  app: http://127.0.0.1:8081", with: upstream)
    }

    // MARK: passing cases

    func testHTTPSURLAloneUsesTheDefaults() throws {
        let upstream = try XCTUnwrap(loadOK(config("  app: https://API.internal"))?.configuration.upstream(named: "app"))
        XCTAssertEqual(upstream.endpoint, .https(host: "api.internal", port: 443))
        XCTAssertEqual(upstream.endpoint.description, "https://api.internal:443")
        XCTAssertTrue(upstream.endpoint.isTLS)
        XCTAssertEqual(upstream.tls, UpstreamTLSConfiguration(ca: nil, serverName: "api.internal", verify: true))
        // Plain upstreams carry no TLS settings.
        XCTAssertNil(loadOK(ConfigTestHelpers.minimal())?.configuration.upstream(named: "app")?.tls)
        XCTAssertNil(UpstreamConfiguration(name: "x", endpoint: .http(host: "a", port: 1), tls: UpstreamTLSConfiguration(serverName: "a")).tls)
    }

    func testCAServerNameAndVerify() throws {
        let loaded = try XCTUnwrap(loadOK(config("""
          app:
            url: https://10.0.2.15:8443
            tls:
              ca: tls/internal-ca.pem
              server_name: API.Internal
              verify: true
        """), base: "/srv/gw"))
        let upstream = try XCTUnwrap(loaded.configuration.upstream(named: "app"))
        XCTAssertEqual(upstream.endpoint, .https(host: "10.0.2.15", port: 8443))
        XCTAssertEqual(upstream.tls, UpstreamTLSConfiguration(ca: "/srv/gw/tls/internal-ca.pem", serverName: "api.internal", verify: true,
                                                              serverNameIsExplicit: true))
        XCTAssertEqual(upstream.tls?.serverNameIsIPAddress, false)
        XCTAssertEqual(loaded.tlsFiles, [TLSFileReference(path: "upstreams.app.tls.ca", mark: SourceMark(line: 9, column: 11),
                                                          files: .certificateAuthorities("/srv/gw/tls/internal-ca.pem"))])
        XCTAssertEqual(loaded.warnings.map(\.path), ["store"])
        // The URL host is the default name, an IP address included (then no SNI is sent).
        let byIP = loadOK(config("  app: {url: 'https://[::1]:9443', tls: {ca: /etc/ca.pem}}"))?.configuration.upstream(named: "app")?.tls
        XCTAssertEqual(byIP, UpstreamTLSConfiguration(ca: "/etc/ca.pem", serverName: "::1"))
        XCTAssertEqual(byIP?.serverNameIsIPAddress, true)
        let named = loadOK(config("  app: {url: https://backend:9443, tls: {server_name: '[::1]'}}"))?.configuration.upstream(named: "app")?.tls
        XCTAssertEqual(named?.serverName, "::1")
    }

    func testVerifyFalseLoadsWithALoudWarning() throws {
        let loaded = try XCTUnwrap(loadOK(config("  app: {url: https://api.internal:8443, tls: {verify: false, ca: ca.pem}}")))
        XCTAssertEqual(loaded.configuration.upstream(named: "app")?.tls?.verify, false)
        XCTAssertEqual(loaded.warnings.filter { $0.path.hasPrefix("upstreams") }.map(\.description), [
            "upstreams.app.tls.verify: TLS VERIFICATION OFF: any certificate is accepted from https://api.internal:8443, so anyone on the network path can impersonate the upstream and read or change what the gateway forwards, verdict headers included; set ca to the upstream's CA instead (line 6, column 55)",
            "upstreams.app.tls.ca: has no effect with verify: false (line 6, column 66)",
        ])
    }

    // MARK: failing cases

    func testTLSOnAPlainUpstreamIsAnError() {
        XCTAssertEqual(errorLines(config("  app: {url: http://127.0.0.1:8081, tls: {verify: false}}")),
                       ["upstreams.app.tls: tls applies to https:// upstreams only, and this one is http://127.0.0.1:8081 (write https:// to connect with TLS) (line 6, column 42)"])
        XCTAssertEqual(errorLines(config("  app: {url: unix:/run/app.sock, tls: {}}")),
                       ["upstreams.app.tls: tls applies to https:// upstreams only, and this one is unix:/run/app.sock (write https:// to connect with TLS) (line 6, column 39)"])
        // A null tls is no tls.
        XCTAssertNotNil(loadOK(config("  app: {url: http://127.0.0.1:8081, tls: ~}")))
    }

    func testTLSValueErrors() {
        XCTAssertEqual(errorLines(config("""
          app:
            url: https://api.internal
            tls:
              ca: ''
              server_name: '*.internal'
              verfiy: false
        """)), [
            "upstreams.app.tls.ca: expected a PEM file of CA certificates path, got an empty string (line 9, column 11)",
            "upstreams.app.tls.server_name: expected one host name, not a pattern: \"*.internal\" (line 10, column 20)",
            "upstreams.app.tls.verfiy: unknown key; did you mean verify? (line 11, column 7)",
        ])
        XCTAssertEqual(errorLines(config("  app: {url: https://api.internal, tls: {server_name: 'api.internal:443', verify: 'no'}}")), [
            "upstreams.app.tls.server_name: expected a host name alone (no scheme, port or path), got \"api.internal:443\" (line 6, column 55)",
            "upstreams.app.tls.verify: expected true or false, got the string \"no\" (write true or false) (line 6, column 83)",
        ])
        XCTAssertEqual(errorLines(config("  app: {url: https://api.internal, tls: [ca.pem]}")),
                       ["upstreams.app.tls: expected a mapping {ca, server_name, verify}, got a list (line 6, column 41)"])
        XCTAssertEqual(errorLines(config("  app: {url: https://api.internal, tls: {server_name: bad_name}}")),
                       ["upstreams.app.tls.server_name: \"bad_name\" is not a host name or IP address (line 6, column 55)"])
        // A broken URL does not hide the problems of its tls.
        XCTAssertEqual(errorLines(config("  app: {url: 'https://api internal', tls: {verify: 1}}")), [
            "upstreams.app.url: \"api internal\" is not a host name or IP address (line 6, column 14)",
            "upstreams.app.tls.verify: expected true or false, got \"1\" (line 6, column 52)",
        ])
    }

    func testHTTPSUpstreamLoopingIntoAListenerIsRefused() {
        XCTAssertEqual(errorLines(config("  app: https://127.0.0.1:8080")),
                       ["upstreams.app: https://127.0.0.1:8080 is the gateway's own listener listen[0] (127.0.0.1:8080): requests would loop (line 6, column 8)"])
    }
}
