@testable import GatewayRedis
import GatewayRules
import XCTest

/// `RedisSentinelResolver.address(from:)`: the `SENTINEL get-master-addr-by-name` reply read into an
/// endpoint, and every malformed or negative answer refused with a reason (no socket).
final class RedisSentinelReplyTests: XCTestCase {
    private func bulk(_ text: String) -> RedisReply { .bulk(Array(text.utf8)) }

    func testAddresses() {
        XCTAssertEqual(try RedisSentinelResolver.address(from: .array([bulk("10.0.0.7"), bulk("6380")])).get(),
                       .tcp(host: "10.0.0.7", port: 6380))
        XCTAssertEqual(try RedisSentinelResolver.address(from: .array([bulk("Redis-1.Internal"), bulk("6379")])).get(),
                       .tcp(host: "redis-1.internal", port: 6379))
        XCTAssertEqual(try RedisSentinelResolver.address(from: .array([bulk("0:0::1"), bulk("1")])).get(),
                       .tcp(host: "::1", port: 1))
    }

    func testRefusals() {
        let refused: [(RedisReply, String)] = [
            (.null, "does not know this master"),
            (.error(Array("ERR unknown command".utf8)), "answered ERR unknown command"),
            (.array([bulk("10.0.0.7")]), "malformed address"),
            (.array([bulk("10.0.0.7"), bulk("0")]), "malformed address"),
            (.array([bulk("10.0.0.7"), bulk("65536")]), "malformed address"),
            (.array([bulk("10.0.0.7"), bulk("x")]), "malformed address"),
            (.array([bulk("bad host"), bulk("6379")]), "malformed host"),
            (.array([.integer(1), bulk("6379")]), "malformed address"),
            (.status(Array("OK".utf8)), "malformed address"),
        ]
        for (reply, reason) in refused {
            switch RedisSentinelResolver.address(from: reply) {
            case .success(let endpoint): XCTFail("\(reply) accepted as \(endpoint)")
            case .failure(let problem): XCTAssertTrue(problem.text.contains(reason), "\(reply): \(problem.text)")
            }
        }
    }
}
