import Foundation
import GatewayRedis
import XCTest

/// Regression from fuzzing the RESP reader (`attest-fuzz resp`, Fuzz/README.md): hiredis 0.14 has no
/// bound on array counts and allocates 8 bytes per declared element up front, so 14 bytes from the
/// Redis connection (`*2147483647\r\n`) reserved 16 GiB and cost seconds of CPU when the reader was
/// freed. `RedisReplyParser` now refuses arrays above `maximumArrayElements` as a protocol error.
final class RedisReplyParserLimitTests: XCTestCase {
    func feed(_ text: String) throws -> [RedisReply] {
        let parser = try XCTUnwrap(RedisReplyParser())
        try Array(text.utf8).withUnsafeBytes { try parser.feed($0) }
        var replies: [RedisReply] = []
        while let reply = try parser.next() { replies.append(reply) }
        return replies
    }

    func testHugeArrayCountIsAProtocolErrorAtOnce() {
        for header in ["*2147483647\r\n", "*300000000\r\n", "*1025\r\n", "*1\r\n*100000\r\n", "*2\r\n:1\r\n*5000\r\n"] {
            XCTAssertThrowsError(try feed(header), header) { error in
                let detail = (error as? RedisReplyParser.ProtocolError)?.detail ?? ""
                XCTAssertTrue(detail.contains("exceeds \(RedisReplyParser.maximumArrayElements)"), "\(header): \(detail)")
            }
        }
    }

    func testArraysUpToTheLimitStillParse() throws {
        let count = Int(RedisReplyParser.maximumArrayElements)
        let replies = try feed("*\(count)\r\n" + String(repeating: ":7\r\n", count: count) + "*2\r\n*0\r\n*-1\r\n")
        XCTAssertEqual(replies, [.array(Array(repeating: .integer(7), count: count)), .array([.array([]), .null])])
    }

    func testOtherProtocolErrorsKeepHiredisMessage() {
        XCTAssertThrowsError(try feed("?bad\r\n")) { error in
            XCTAssertFalse(((error as? RedisReplyParser.ProtocolError)?.detail ?? "").contains("exceeds"))
        }
    }

    /// The input libFuzzer reported (out-of-memory: malloc(8000000000) from `*1000000000` inside a
    /// pipeline of small replies), split-seed byte removed.
    static let fuzzInput: [UInt8] = {
        let parts = [
            "KjINCiowDQo6MQ0KOjINCiowDQo6MA0KOjENCjoyDQoqMA0KOjENCjoyDQoqMA0KOjIxDQo6Mg0KKjANCjoxDQo6Mg0KKjAN",
            "CjoyMg0KKjANCjoyDQoqMQ0KOjINCiowDQo6MjENCjoyDQoqMA0KOjENCjoyDQoqMA0KOjINCjoyDQoqMQ0KOjINCiowDQo6",
            "MjENCjoyDQoqMA0KOjENCjoyDQoqMA0KOjINCjoyDQoqMA0KOjANCjoxDQo6Mg0KKjANCjoxDQo6Mg0KKjANCjo0Mg0KOjIN",
            "CiowDQo6MQ0KOjINCiowDQo6MjINCiowDQo6Mg0KKjENCjoyMjENCjoyDQoqMA0KOjENCjoyDQo6MjINCiowDQo6Mg0KKjAN",
            "CjoyDQoqMQ0KOjINCiowDQo6MjENCiowDQo6MQ0KOjINCio1DQo6MjINCiowDQo6Mg0KKjENCjoyDQoqMTAwMDAwMDAwMA0K",
            "OjINCioxDQo6Mg0KKjANCjoyMQ0KOjINCiowDQo6MQ0KOjINCiowDQo6Mg0KOjINCiowDQo6MA0KOjENCjoyDQoqMA0KOjEN",
            "CjoyDQoqMA0KOjIxDQo6MQ0KOjINCiowDQo6MQ0KOjINCjoxDQo6Mg0KKjANCjowDQo6MQ0KOjINCiowDQo6MQ0KOjINCiow",
            "DQo6MjENCjoyDQoqMA0KOjENCjoyDQoqMA0KOjIyDQoqMA0KOjINCioxDQo6Mg0KKjANCjoyMQ0KOjINCiowDQo6MQ0KOjIN",
            "CiowDQo6Mg0KOjINCiowDQo6AAAAADANCjoxDTIxDQo6Mg0KKjANCjoxDQo6Mg0KDQo6Mg0KDQoNCjoyDQoyDQoqMAQq",
        ]
        return [UInt8](Data(base64Encoded: parts.joined())!)
    }()

    func testFuzzInputStopsAtTheHugeArray() throws {
        let parser = try XCTUnwrap(RedisReplyParser())
        var replies: [RedisReply] = []
        XCTAssertThrowsError(try {
            try Self.fuzzInput.withUnsafeBytes { try parser.feed($0) }
            while let reply = try parser.next() { replies.append(reply) }
        }()) { error in
            XCTAssertTrue(((error as? RedisReplyParser.ProtocolError)?.detail ?? "").contains("1000000000 elements exceeds"))
        }
        XCTAssertEqual(replies.first, .array([.array([]), .integer(1)]))
    }
}
