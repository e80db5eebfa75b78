import GatewayRules
import XCTest

/// The one Redis URL grammar (`RedisURL`), read by the configuration's `store:` and by
/// `attestctl keys --store` (both entry points over the same table: GatewayTests/RedisURLAgreementTests).
final class RedisURLTests: XCTestCase {
    private func parse(_ text: String, base: String? = "/srv") -> Result<RedisURL, RedisURLError> {
        do throws(RedisURLError) { return .success(try RedisURL(parsing: text, baseDirectory: base)) } catch { return .failure(error) }
    }

    private func accepted(_ text: String, _ expected: RedisURL, base: String? = "/srv", file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(parse(text, base: base), .success(expected), text, file: file, line: line)
    }

    private func refused(_ text: String, _ expected: RedisURLError? = nil, base: String? = "/srv",
                         file: StaticString = #filePath, line: UInt = #line) {
        switch parse(text, base: base) {
        case .success(let url): XCTFail("\(text): accepted as \(url)", file: file, line: line)
        case .failure(let error): if let expected { XCTAssertEqual(error, expected, text, file: file, line: line) }
        }
    }

    func testTCPForms() {
        accepted("redis://127.0.0.1:6380/3", RedisURL(endpoint: .tcp(host: "127.0.0.1", port: 6380), database: 3))
        accepted("redis://redis.internal", RedisURL(endpoint: .tcp(host: "redis.internal", port: 6379)))
        accepted("redis://Cache.Internal/", RedisURL(endpoint: .tcp(host: "cache.internal", port: 6379)))
        accepted("redis://:s%40cret:x@host:1/", RedisURL(endpoint: .tcp(host: "host", port: 1), password: "s@cret:x"))
        accepted("redis://:pa%3Ass@cache:7000/3", RedisURL(endpoint: .tcp(host: "cache", port: 7000), password: "pa:ss", database: 3))
        accepted("redis://gateway:pw@[::1]:7000/15", RedisURL(endpoint: .tcp(host: "::1", port: 7000), username: "gateway", password: "pw", database: 15))
        accepted("redis://[0:0::1]", RedisURL(endpoint: .tcp(host: "::1", port: 6379)))
        accepted("redis://:@h", RedisURL(endpoint: .tcp(host: "h", port: 6379), password: ""))
        accepted("redis://h/2147483647", RedisURL(endpoint: .tcp(host: "h", port: 6379), database: 2147483647))
    }

    func testTLSForms() {
        var one = RedisURL(endpoint: .tcp(host: "cache.internal", port: 6380), password: "pw", database: 2)
        one.tls = true
        accepted("rediss://:pw@Cache.Internal:6380/2", one)
        XCTAssertEqual(one.description, "rediss://:***@cache.internal:6380/2")
        var cluster = RedisURL.cluster(seeds: [.tcp(host: "10.0.0.1", port: 7000), .tcp(host: "::1", port: 6379)])
        cluster.tls = true
        accepted("rediss+cluster://10.0.0.1:7000,[::1]", cluster)
        XCTAssertEqual(cluster.description, "rediss+cluster://10.0.0.1:7000,[::1]:6379")
        // The plain schemes stay plain.
        accepted("redis://cache.internal:6380/2", RedisURL(endpoint: .tcp(host: "cache.internal", port: 6380), database: 2))
        guard case .success(let plain) = parse("redis+cluster://10.0.0.1:7000") else { return XCTFail("refused") }
        XCTAssertFalse(plain.tls)
        XCTAssertEqual(plain.description, "redis+cluster://10.0.0.1:7000")
    }

    func testSentinelForms() {
        let sentinels: [RedisURL.Endpoint] = [.tcp(host: "10.0.0.1", port: 26379), .tcp(host: "s2.internal", port: 5000)]
        accepted("redis+sentinel://10.0.0.1,S2.internal:5000/my-primary",
                 RedisURL(endpoint: sentinels[0], topology: .sentinel(sentinels: sentinels, master: "my-primary")))
        accepted("redis+sentinel://:pw@10.0.0.1/main_1.x/3",
                 RedisURL(endpoint: sentinels[0], password: "pw", database: 3, topology: .sentinel(sentinels: [sentinels[0]], master: "main_1.x")))
        guard case .success(let url) = parse("redis+sentinel://u:hunter2@[::1]:26380,10.0.0.1/main/") else { return XCTFail("refused") }
        XCTAssertEqual(url.sentinel?.master, "main")
        XCTAssertEqual(url.sentinel?.sentinels, [.tcp(host: "::1", port: 26380), .tcp(host: "10.0.0.1", port: 26379)])
        XCTAssertEqual(url.description, "redis+sentinel://u:***@[::1]:26380,10.0.0.1:26379/main/0")
        XCTAssertNil(url.clusterSeeds)
        XCTAssertFalse(url.tls)
        // Refused: no master, a bad master name, a bad db, repeated or empty Sentinels, query, extra path.
        refused("redis+sentinel://h:26379")
        refused("redis+sentinel://h:26379/")
        refused("redis+sentinel://h:26379/my master")
        refused("redis+sentinel://h:26379/" + String(repeating: "m", count: 65))
        refused("redis+sentinel://h:26379/main/x", .invalidDatabase("x"))
        refused("redis+sentinel://h:26379/main/0/1")
        refused("redis+sentinel://h:1,h:1/main")
        refused("redis+sentinel://h:1,,h:2/main")
        refused("redis+sentinel://h:1/main?db=1")
        refused("redis+sentinel://h:0/main", .invalidPort("0"))
        refused("REDIS+SENTINEL://h:1/main", .unsupportedScheme("REDIS+SENTINEL"))
        guard case .failure(let error) = parse("redis+sentinel://:hunter2@h:1/bad name") else { return XCTFail("accepted") }
        XCTAssertFalse(error.description.contains("hunter2"), "\(error)")
    }

    func testUnixForms() {
        accepted("unix:///run/redis/redis.sock?db=2", RedisURL(endpoint: .unix(path: "/run/redis/redis.sock"), database: 2))
        accepted("unix:/tmp/r.sock", RedisURL(endpoint: .unix(path: "/tmp/r.sock")))
        accepted("unix:redis.sock", RedisURL(endpoint: .unix(path: "/srv/redis.sock")))
        accepted("unix:../run/./r.sock", RedisURL(endpoint: .unix(path: "/run/r.sock")))
        accepted("unix://:pw@/tmp/r.sock?db=1", RedisURL(endpoint: .unix(path: "/tmp/r.sock"), password: "pw", database: 1))
        accepted("unix:/tmp/r.sock?password=a%26b&username=u&db=4",
                 RedisURL(endpoint: .unix(path: "/tmp/r.sock"), username: "u", password: "a&b", database: 4))
        accepted("unix:///tmp/a%20b@c.sock", RedisURL(endpoint: .unix(path: "/tmp/a%20b@c.sock")))  // taken as written
        accepted("unix:/tmp/r.sock", RedisURL(endpoint: .unix(path: "/tmp/r.sock")), base: nil)
    }

    func testRefusals() {
        refused("http://host", .unsupportedScheme("http"))
        refused("REDIS://host", .unsupportedScheme("REDIS"))
        refused("memory", .unsupportedScheme("memory"))
        refused("REDISS://host", .unsupportedScheme("REDISS"))
        refused("rediss://host/x", .invalidDatabase("x"))
        refused("rediss://host?db=1")
        refused("rediss://", .malformed("the Redis URL has no host (redis://host:port/db)"))
        refused("redis://host:0", .invalidPort("0"))
        refused("redis://host:65536", .invalidPort("65536"))
        refused("redis://host:abc", .invalidPort("abc"))
        refused("redis://host:", .invalidPort(""))
        refused("redis://host/x", .invalidDatabase("x"))
        refused("redis://host/-1", .invalidDatabase("-1"))
        refused("redis://host/+1", .invalidDatabase("+1"))
        refused("redis://host/01", .invalidDatabase("01"))
        refused("redis://host/2147483648", .invalidDatabase("2147483648"))
        refused("redis://bad_host", .invalidHost("bad_host"))
        refused("redis://[::g]:1", .invalidHost("::g"))
        refused("redis://[fe80::1%25eth0]", .invalidHost("fe80::1%25eth0"))
        refused("redis://1.2.3.256", .invalidHost("1.2.3.256"))
        refused("redis://:p%zz@host", .badCredentialEncoding)
        refused("unix:/tmp/s?password=%zz", .badCredentialEncoding)
        refused("unix:redis.sock", .relativePath("redis.sock"), base: nil)
        refused("unix:/" + String(repeating: "s", count: 107), .pathTooLong("/" + String(repeating: "s", count: 107)))
        for text in ["redis://", "redis://:6379", "redis://::1:6379", "redis://[::1", "redis://user@host",
                     "redis://host?db=1", "redis://host?", "redis://host#x", "unix://relative.sock", "unix://host/tmp/s",
                     "unix://", "unix:", "unix:/", "unix:/tmp/s?", "unix:/tmp/s?timeout=1", "unix:/tmp/s?db",
                     "unix:/tmp/s?db=1&db=2", "unix:/tmp/s#x", "unix:/tmp/s?username=u", "unix://:a@/tmp/s?password=b",
                     "unix:/tmp/s?user=u&password=p"] {
            refused(text)
        }
        refused("unix:/tmp/s?db=x", .invalidDatabase("x"))
    }

    func testNothingEchoesThePassword() {
        for text in ["redis://:hunter2@host:0", "redis://u:hunter2@bad_host", "redis://:hunter2@h/x", "redis://hunter2@h",
                     "unix://:hunter2@/tmp/s?timeout=1", "unix:/tmp/s?password=hunter2&password=x", "unix:/tmp/s?password=hunter2&db=z",
                     "memcached://:hunter2@x"] {
            guard case .failure(let error) = parse(text) else { XCTFail("\(text): accepted"); continue }
            XCTAssertFalse(error.description.contains("hunter2"), "\(text): \(error)")
        }
    }

    func testDescriptionHidesPassword() throws {
        XCTAssertEqual(try RedisURL(parsing: "redis://u:topsecret@h:1/2").description, "redis://u:***@h:1/2")
        XCTAssertEqual(try RedisURL(parsing: "redis://:topsecret@[::1]").description, "redis://:***@[::1]:6379/0")
        XCTAssertEqual(try RedisURL(parsing: "unix:/r.sock?password=topsecret&db=3").description, "unix://:***@/r.sock?db=3")
        XCTAssertEqual(try RedisURL(parsing: "unix:/r.sock").description, "unix:///r.sock")
    }

    func testErrorDescriptions() {
        XCTAssertEqual(RedisURLError.invalidPort("0").description, "the Redis port must be a number from 1 to 65535, got \"0\"")
        XCTAssertEqual(RedisURLError.invalidHost("a\"b\n").description, "\"a\\\"b\\u{a}\" is not a host name, an IPv4 address or an IPv6 address")
        XCTAssertEqual(RedisURLError.unsupportedScheme("http").description,
                       "expected redis[s]://[[user]:password@]host[:port][/db], redis[s]+cluster://host:port[,host:port...], redis+sentinel://host:port[,host:port...]/master-name or unix:/path/to/redis.sock[?db=N], got the scheme \"http\"")
    }

    func testClusterForms() {
        let a = RedisURL.Endpoint.tcp(host: "10.0.0.1", port: 7000)
        let b = RedisURL.Endpoint.tcp(host: "cache-b.internal", port: 6379)
        let c = RedisURL.Endpoint.tcp(host: "::1", port: 7002)
        accepted("redis+cluster://10.0.0.1:7000", .cluster(seeds: [a]))
        accepted("redis+cluster://10.0.0.1:7000,Cache-B.internal,[::1]:7002/", .cluster(seeds: [a, b, c]))
        accepted("redis+cluster://u:p%40ss@10.0.0.1:7000/0", .cluster(seeds: [a], username: "u", password: "p@ss"))
        accepted("redis+cluster://:pw@10.0.0.1:7000,[::1]:7002", .cluster(seeds: [a, c], password: "pw"))
        let url = try? RedisURL(parsing: "redis+cluster://10.0.0.1:7000,cache-b.internal")
        XCTAssertEqual(url?.clusterSeeds, [a, b])
        XCTAssertEqual(url?.endpoint, a)
        XCTAssertNil((try? RedisURL(parsing: "redis://10.0.0.1:7000"))?.clusterSeeds)
    }

    func testClusterRefusals() {
        refused("redis+cluster://h:7000/1")
        refused("redis+cluster://h:7000/x")
        refused("redis+cluster://h:7000,,h2:7001")
        refused("redis+cluster://h:7000,")
        refused("redis+cluster://")
        refused("redis+cluster://h:7000?db=0")
        refused("redis+cluster://h:7000#x")
        refused("redis+cluster://h:7000,h:7000")
        refused("redis+cluster://h:0", .invalidPort("0"))
        refused("redis+cluster://h:1,bad_host:2", .invalidHost("bad_host"))
        refused("redis+cluster://user@h:1")
        refused("redis+cluster://" + (1...17).map { "h:\($0)" }.joined(separator: ","))
        refused("rediss+cluster://h:1/1")
        refused("rediss+cluster://h:1,h:1")
        refused("rediss+sentinel://h:26379/mymaster", .sentinelNotSupported)
        refused("REDIS+CLUSTER://h:1", .unsupportedScheme("REDIS+CLUSTER"))
        guard case .failure(let error) = parse("redis+cluster://:hunter2@h:1/5") else { return XCTFail("accepted") }
        XCTAssertFalse(error.description.contains("hunter2"), "\(error)")
    }

    func testClusterDescriptionHidesPassword() throws {
        XCTAssertEqual(try RedisURL(parsing: "redis+cluster://u:topsecret@h:1,[::1]:2").description, "redis+cluster://u:***@h:1,[::1]:2")
        XCTAssertEqual(try RedisURL(parsing: "redis+cluster://h").description, "redis+cluster://h:6379")
        // The description parses back to the same seeds.
        XCTAssertEqual(try RedisURL(parsing: try RedisURL(parsing: "redis+cluster://b:2,a:1").description).clusterSeeds,
                       [.tcp(host: "b", port: 2), .tcp(host: "a", port: 1)])
    }
}
