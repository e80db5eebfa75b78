import XCTest
@testable import GatewayConfig

/// Sizes, durations, addresses and URLs: what is accepted and what is refused (both sides).
final class SyntaxTests: XCTestCase {
    private func size(_ s: String) -> Int? { try? ByteSize.parse(s).get() }
    private func sizeError(_ s: String) -> String? {
        if case .failure(let e) = ByteSize.parse(s) { return e.message }
        return nil
    }
    private func duration(_ s: String) -> Duration? { try? DurationSyntax.parse(s).get() }
    private func durationError(_ s: String) -> String? {
        if case .failure(let e) = DurationSyntax.parse(s) { return e.message }
        return nil
    }

    func testSizesAccepted() {
        XCTAssertEqual(size("0"), 0)
        XCTAssertEqual(size("1048576"), 1_048_576)
        XCTAssertEqual(size("512B"), 512)
        XCTAssertEqual(size("64KiB"), 65_536)
        XCTAssertEqual(size("1MiB"), 1_048_576)
        XCTAssertEqual(size("1GiB"), 1 << 30)
        XCTAssertEqual(ByteSize.format(1 << 20), "1MiB")
        XCTAssertEqual(ByteSize.format(65_536), "64KiB")
        XCTAssertEqual(ByteSize.format(1000), "1000")
        XCTAssertEqual(ByteSize.format(0), "0")
    }

    func testSizesRefused() {
        XCTAssertEqual(sizeError("1MB"), "ambiguous unit \"MB\" in \"1MB\": write 1MiB or 1000000 (plain bytes)")
        XCTAssertEqual(sizeError("64k"), "ambiguous unit \"k\" in \"64k\": write 64KiB or 64000 (plain bytes)")
        XCTAssertEqual(sizeError("1mib"), "expected a size like 64KiB or 1MiB (or plain bytes), got \"1mib\"; did you mean 1MiB?")
        for bad in ["lots", "", "-1", "+5", "1.5MiB", "1 MiB", "MiB", "0x10", "01", "99999999999999999999", "1PiB"] {
            XCTAssertNil(size(bad), bad)
        }
        XCTAssertEqual(sizeError("9999999999TiB"), "\"9999999999TiB\" is too large")
    }

    func testDurationsAccepted() {
        XCTAssertEqual(duration("300s"), .seconds(300))
        XCTAssertEqual(duration("500ms"), .milliseconds(500))
        XCTAssertEqual(duration("2m"), .seconds(120))
        XCTAssertEqual(duration("1h"), .seconds(3600))
        XCTAssertEqual(duration("1h30m"), .seconds(5400))
        XCTAssertEqual(duration("1m30s500ms"), .milliseconds(90_500))
        XCTAssertEqual(duration("0"), .zero)
        XCTAssertEqual(duration("0s"), .zero)
        XCTAssertEqual(DurationSyntax.format(.seconds(300)), "5m")
        XCTAssertEqual(DurationSyntax.format(.milliseconds(1500)), "1500ms")
        XCTAssertEqual(DurationSyntax.format(.seconds(7200)), "2h")
    }

    func testDurationsRefused() {
        XCTAssertEqual(durationError("300"), "expected a duration like 300s, 500ms, 2m or 1h, got \"300\": add a unit (300s or 300ms)")
        XCTAssertEqual(durationError("1.5s"), "expected a duration like 300s, 500ms, 2m or 1h, got \"1.5s\": fractions are not accepted, use a smaller unit (e.g. 1500ms)")
        XCTAssertEqual(durationError("30s1m"), "expected a duration like 300s, 500ms, 2m or 1h, got \"30s1m\": write the units largest first, each once (e.g. 1m30s)")
        XCTAssertEqual(durationError("1d"), "expected a duration like 300s, 500ms, 2m or 1h, got \"1d\": unknown unit \"d\" (use h, m, s or ms)")
        XCTAssertEqual(durationError("1001h"), "\"1001h\" is longer than 1000h")
        for bad in ["", "s", "-1s", "1 s", "1S", "10us", "99999999999h", "1s1s"] {
            XCTAssertNil(duration(bad), bad)
        }
    }

    func testListenAddresses() {
        func ok(_ s: String) -> SocketAddress? { try? SocketAddress.parse(s, baseDirectory: "/etc/gw").get() }
        func err(_ s: String) -> String? {
            if case .failure(let e) = SocketAddress.parse(s, baseDirectory: "/etc/gw") { return e.message }
            return nil
        }
        XCTAssertEqual(ok("127.0.0.1:8080"), .ip(host: "127.0.0.1", port: 8080))
        XCTAssertEqual(ok("[::1]:8080"), .ip(host: "::1", port: 8080))
        XCTAssertEqual(ok("[0:0:0:0:0:0:0:1]:80"), .ip(host: "::1", port: 80))
        XCTAssertEqual(ok("[::]:0"), .ip(host: "::", port: 0))
        XCTAssertEqual(ok("unix:/run/gw.sock"), .unix(path: "/run/gw.sock"))
        XCTAssertEqual(ok("unix:///run/gw.sock"), .unix(path: "/run/gw.sock"))
        XCTAssertEqual(ok("unix:run/../gw.sock"), .unix(path: "/etc/gw/gw.sock"))
        XCTAssertEqual(ok("[::1]:8080")?.description, "[::1]:8080")
        XCTAssertEqual(err("8080"), "\"8080\" has no host: write 127.0.0.1:8080 (this machine only) or 0.0.0.0:8080 (every interface)")
        XCTAssertEqual(err(":8080"), "\":8080\" has no host: write 127.0.0.1:8080 (this machine only) or 0.0.0.0:8080 (every interface)")
        XCTAssertEqual(err("127.0.0.1"), "\"127.0.0.1\" has no port: write 127.0.0.1:8080 for example")
        XCTAssertEqual(err("127.0.0.1:65536"), "the port in \"127.0.0.1:65536\" must be a number from 0 to 65535")
        XCTAssertEqual(err("::1:8080"), "IPv6 addresses need brackets: [::1]:port, got \"::1:8080\"")
        XCTAssertEqual(err("gateway.internal:80"), "listeners take an IP address, not a host name (\"gateway.internal\"): write an IP address such as 0.0.0.0:80")
        XCTAssertEqual(err("256.0.0.1:80"), "\"256.0.0.1\" is not an IPv4 address (IPv6 goes in brackets: [::1]:80)")
        XCTAssertEqual(err("http://127.0.0.1:80"), "expected an address like 127.0.0.1:8080, [::1]:8080, 0.0.0.0:8080 or unix:/path/to.sock, not a URL: \"http://127.0.0.1:80\"")
        XCTAssertNotNil(err("[fe80::1%eth0]:80"))
        XCTAssertNotNil(err("127.0.0.01:80"))
        XCTAssertNotNil(err("unix:"))
        XCTAssertNotNil(err("unix:/" + String(repeating: "a", count: 120)))
    }

    func testAddressConflicts() {
        let a = SocketAddress.ip(host: "0.0.0.0", port: 80), b = SocketAddress.ip(host: "127.0.0.1", port: 80)
        XCTAssertTrue(a.conflicts(with: b))
        // IPv6 listeners are IPv6-only: `[::]` and an IPv4 address share a port, as nginx's pair
        // `listen 80; listen [::]:80;` does.
        XCTAssertFalse(SocketAddress.ip(host: "::", port: 80).conflicts(with: b))
        XCTAssertFalse(SocketAddress.ip(host: "::", port: 80).conflicts(with: a))
        XCTAssertTrue(SocketAddress.ip(host: "::", port: 80).conflicts(with: .ip(host: "::1", port: 80)))
        XCTAssertTrue(SocketAddress.ip(host: "::1", port: 80).conflicts(with: .ip(host: "::", port: 80)))
        XCTAssertTrue(SocketAddress.ip(host: "::", port: 80).conflicts(with: .ip(host: "::", port: 80)))
        XCTAssertFalse(b.conflicts(with: .ip(host: "127.0.0.2", port: 80)))
        XCTAssertFalse(b.conflicts(with: .ip(host: "127.0.0.1", port: 81)))
        XCTAssertFalse(SocketAddress.ip(host: "127.0.0.1", port: 0).conflicts(with: .ip(host: "127.0.0.1", port: 0)))
        XCTAssertTrue(SocketAddress.unix(path: "/a").conflicts(with: .unix(path: "/a")))
    }

    func testUpstreamURLs() {
        func ok(_ s: String) -> UpstreamEndpoint? { try? UpstreamEndpoint.parse(s, baseDirectory: "/srv").get() }
        func err(_ s: String) -> String? {
            if case .failure(let e) = UpstreamEndpoint.parse(s, baseDirectory: "/srv") { return e.message }
            return nil
        }
        XCTAssertEqual(ok("http://127.0.0.1:8081"), .http(host: "127.0.0.1", port: 8081))
        XCTAssertEqual(ok("http://Backend.Internal"), .http(host: "backend.internal", port: 80))
        XCTAssertEqual(ok("http://[::1]:8081/"), .http(host: "::1", port: 8081))
        XCTAssertEqual(ok("unix:/run/app.sock"), .unix(path: "/run/app.sock"))
        XCTAssertEqual(ok("unix:app.sock"), .unix(path: "/srv/app.sock"))
        XCTAssertEqual(ok("https://x"), .https(host: "x", port: 443))
        XCTAssertEqual(ok("https://API.internal:8443/"), .https(host: "api.internal", port: 8443))
        XCTAssertEqual(ok("https://[::1]:8443")?.description, "https://[::1]:8443")
        XCTAssertEqual(err("https://u@x"), "upstream URLs take no user info (user@): \"https://u@x\"")
        XCTAssertEqual(err("https://x/api"), "upstream URLs take no path (\"/api\"): requests are forwarded with the path they arrived with")
        XCTAssertEqual(err("http://u:p@x:1"), "upstream URLs take no user info (user@): \"http://u:p@x:1\"")
        XCTAssertEqual(err("http://x:1?a=b"), "upstream URLs take no query or fragment: \"http://x:1?a=b\"")
        XCTAssertEqual(err("http://x:0"), "the port in \"http://x:0\" must be a number from 1 to 65535")
        XCTAssertEqual(err("ftp://x"), "expected http://host:port, https://host:port or unix:/path/to.sock, got \"ftp://x\"")
        XCTAssertEqual(err("http://bad_host:1"), "\"bad_host\" is not a host name or IP address")
        XCTAssertEqual(err("http://[::g]:1"), "\"::g\" is not an IPv6 address")
    }

    func testAppIDs() {
        XCTAssertEqual(AppID("ABCDE12345.com.example.app")?.description, "ABCDE12345.com.example.app")
        XCTAssertEqual(AppID("ABCDE12345.com.Example-App2")?.bundleID, "com.Example-App2")
        for bad in ["ABCDE12345", "abcde12345.com.x", "ABCDE1234.com.x", "ABCDE123456.com.x", "ABCDE12345.", "ABCDE12345.com..x", "ABCDE12345.com_x", "ABCDE12345.com.x."] {
            XCTAssertNil(AppID(bad), bad)
            XCTAssertNotNil(AppID.problem(bad), bad)
        }
    }

    func testNormalForm() {
        XCTAssertNil(PathSyntax.problem("/"))
        XCTAssertNil(PathSyntax.problem("/v1/purchases"))
        XCTAssertNil(PathSyntax.problem("/v1/a:b@c/!$&'()*+,="))
        XCTAssertNil(PathSyntax.problem("/v1/a%3Bb"))
        XCTAssertNil(PathSyntax.problem("/v1/%C3%A9"))
        XCTAssertNotNil(PathSyntax.problem("/v1/./x"))
        XCTAssertNotNil(PathSyntax.problem("/v1/.."))
        XCTAssertNotNil(PathSyntax.problem("/v1/%4"))
        XCTAssertNotNil(PathSyntax.problem("/v1/%41"))
        XCTAssertEqual(PathSyntax.problem("/v1/café"), "contains \"é\", which must be percent-encoded: %C3%A9")
        XCTAssertNotNil(PathSyntax.problem("/v1#x"))
        XCTAssertNotNil(PathSyntax.problem("//"))
        // What the gateway refuses in a request-target at run time, check-config refuses too.
        XCTAssertEqual(PathSyntax.problem("/admin;x/secret"), "must not contain ; (requests with path parameters are refused, as some upstreams strip them before routing): write %3B for a literal ;")
        XCTAssertEqual(PathSyntax.problem("/a%5Cb"), "must not contain %5C (an encoded \\)")
        XCTAssertEqual(PathSyntax.problem("/a%0A"), "must not contain %0A (an encoded control character)")
        XCTAssertEqual(PathSyntax.problem("/a%7F"), "must not contain %7F (an encoded control character)")
        XCTAssertEqual(PathSyntax.problem("/a%2Fb"), "must not contain %2F (an encoded /)")
        XCTAssertEqual(PathSyntax.problem("/v1#x"), "must not contain a fragment (#)")
        XCTAssertEqual(PathSyntax.problem("/v1?x"), "must not contain a query (?)")
        XCTAssertEqual(PathSyntax.problem("/a/%2e"), "has lower-case percent-encoding; write %2E")
        XCTAssertEqual(PathSyntax.problem("*"), "must start with /")
        XCTAssertEqual(PathSyntax.problem(""), "must start with /")
        XCTAssertEqual(PathSyntax.problem("/" + String(repeating: "a", count: 1024)), "is longer than 1024 bytes")
        XCTAssertNil(PathSyntax.problem("/" + String(repeating: "a", count: 1023)))
    }

    func testSuggestions() {
        XCTAssertEqual(Suggestion.closest(to: "maxBody", among: ConfigSchema.keys(.route)), "max_body")
        XCTAssertEqual(Suggestion.closest(to: "MAX_BODY", among: ConfigSchema.keys(.route)), "max_body")
        XCTAssertEqual(Suggestion.closest(to: "upstrem", among: ConfigSchema.keys(.route)), "upstream")
        XCTAssertEqual(Suggestion.closest(to: "methdos", among: ConfigSchema.keys(.route)), "methods")
        XCTAssertNil(Suggestion.closest(to: "colour", among: ConfigSchema.keys(.route)))
        XCTAssertNil(Suggestion.closest(to: "x", among: ConfigSchema.keys(.route)))
    }
}
