import GatewayRedis
import XCTest

/// `redis://` and `unix://` URL parsing.
final class RedisURLTests: XCTestCase {
    func testTCPForms() throws {
        XCTAssertEqual(try RedisURL(parsing: "redis://127.0.0.1:6380/3"),
                       RedisURL(endpoint: .tcp(host: "127.0.0.1", port: 6380), database: 3))
        XCTAssertEqual(try RedisURL(parsing: "redis://redis.internal"),
                       RedisURL(endpoint: .tcp(host: "redis.internal", port: 6379), database: 0))
        XCTAssertEqual(try RedisURL(parsing: "redis://:s%40cret:x@host:1/"),
                       RedisURL(endpoint: .tcp(host: "host", port: 1), password: "s@cret:x"))
        XCTAssertEqual(try RedisURL(parsing: "redis://gateway:pw@[::1]:7000/15"),
                       RedisURL(endpoint: .tcp(host: "::1", port: 7000), username: "gateway", password: "pw", database: 15))
        XCTAssertEqual(try RedisURL(parsing: "redis://[::1]"), RedisURL(endpoint: .tcp(host: "::1", port: 6379)))
    }

    func testUnixForms() throws {
        XCTAssertEqual(try RedisURL(parsing: "unix:///run/redis/redis.sock?db=2"),
                       RedisURL(endpoint: .unix(path: "/run/redis/redis.sock"), database: 2))
        XCTAssertEqual(try RedisURL(parsing: "unix:///tmp/r.sock"), RedisURL(endpoint: .unix(path: "/tmp/r.sock")))
        XCTAssertEqual(try RedisURL(parsing: "unix://:pw@/tmp/r.sock?db=1"),
                       RedisURL(endpoint: .unix(path: "/tmp/r.sock"), password: "pw", database: 1))
        XCTAssertEqual(try RedisURL(parsing: "unix:///tmp/r.sock?password=a%26b&username=u&db=4"),
                       RedisURL(endpoint: .unix(path: "/tmp/r.sock"), username: "u", password: "a&b", database: 4))
    }

    func testRefusals() {
        let bad: [(String, RedisURLError?)] = [
            ("http://host", .unsupportedScheme("http")),
            ("rediss://host", nil),
            ("redis://host:0", .invalidPort("0")),
            ("redis://host:65536", .invalidPort("65536")),
            ("redis://host:abc", .invalidPort("abc")),
            ("redis://host/x", .invalidDatabase("x")),
            ("redis://host/-1", .invalidDatabase("-1")),
            ("redis://host/99999999", .invalidDatabase("99999999")),
            ("redis://", nil), ("redis://:6379", nil), ("redis://::1:6379", nil), ("redis://[::1", nil),
            ("redis://user@host", nil), ("redis://host?db=1", nil), ("redis://host#x", nil),
            ("unix://relative.sock", nil), ("unix://", nil), ("unix:///tmp/s?db=x", .invalidDatabase("x")),
            ("unix:///tmp/s?timeout=1", nil), ("redis://:%zz@host", nil),
        ]
        for (text, expected) in bad {
            XCTAssertThrowsError(try RedisURL(parsing: text), text) { error in
                guard let urlError = error as? RedisURLError else { return XCTFail("\(text): \(error)") }
                if let expected { XCTAssertEqual(urlError, expected, text) }
            }
        }
    }

    func testDescriptionHidesPassword() throws {
        let url = try RedisURL(parsing: "redis://u:topsecret@h:1/2")
        XCTAssertFalse(url.description.contains("topsecret"))
        XCTAssertEqual(url.description, "redis://u:***@h:1/2")
    }
}
