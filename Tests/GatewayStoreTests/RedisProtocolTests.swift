import CHiredis
@testable import GatewayRedis
import GatewayTestSupport
import XCTest

/// RESP framing (our request encoder, checked against hiredis' `redisFormatCommandArgv`; hiredis'
/// `redisReader` for replies) and the decimal helpers, without sockets.
final class RedisProtocolTests: XCTestCase {
    func testCommandEncodingIsBinarySafe() {
        var command = RedisCommand()
        command.append("SET")
        command.append([0x00, 0x0d, 0x0a, 0xff] as [UInt8])
        command.append([UInt8]())
        command.append(decimal: -42)
        let expected = Array("*4\r\n$3\r\nSET\r\n$4\r\n".utf8) + [0x00, 0x0d, 0x0a, 0xff]
            + Array("\r\n$0\r\n\r\n$3\r\n-42\r\n".utf8)
        XCTAssertEqual(command.encoded(), expected)
        var empty = RedisCommand()
        empty.append([UInt8]())
        XCTAssertEqual(empty.encoded(), Array("*1\r\n$0\r\n\r\n".utf8))
        XCTAssertNil(RedisCommand().encoded())
    }

    /// Golden from another implementation: hiredis' `redisFormatCommandArgv` frames the same arguments
    /// to the same bytes, for random binary commands (empty arguments, CR LF and NUL bytes, 0 to 40
    /// arguments, arguments up to 3 KiB: lengths of 1 to 4 digits).
    func testCommandEncodingMatchesHiredis() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<400 {
            var command = RedisCommand(capacity: 0)
            var arguments: [[UInt8]] = []
            for _ in 0..<Int.random(in: 1...40, using: &generator) {
                let sizes: [Int] = [0, 1, 9, 10, 99, 100, 3000]
                let length = sizes.randomElement(using: &generator)! + Int.random(in: 0...1, using: &generator)
                let alphabet: [UInt8] = [0x00, 0x0d, 0x0a, 0x24, 0x2a, 0xff, 0x41]
                let argument: [UInt8] = (0..<length).map { _ in alphabet.randomElement(using: &generator)! }
                arguments.append(argument)
                command.append(argument)
            }
            let flat: [UInt8] = arguments.flatMap { $0 } + [0]
            var starts: [Int] = []
            var offset = 0
            for argument in arguments { starts.append(offset); offset += argument.count }
            var lengths: [Int] = arguments.map(\.count)
            let hiredis: [UInt8] = flat.withUnsafeBufferPointer { base in
                var argv: [UnsafePointer<CChar>?] = starts.map {
                    UnsafeRawPointer(base.baseAddress! + $0).assumingMemoryBound(to: CChar.self)
                }
                var target: UnsafeMutablePointer<CChar>?
                let length = redisFormatCommandArgv(&target, Int32(arguments.count), &argv, &lengths)
                defer { redisFreeCommand(target) }
                guard length > 0, let target else { return [] }
                return Array(UnsafeRawBufferPointer(start: target, count: Int(length)))
            }
            XCTAssertFalse(hiredis.isEmpty)
            XCTAssertEqual(command.encoded(), hiredis, "arguments: \(arguments.map(\.count))")
        }
    }

    func testAppendArgumentsKeepsBoundaries() {
        var args = RedisCommand()
        args.append("a"); args.append("bc")
        var command = RedisCommand()
        command.append("X")
        command.appendArguments(of: args)
        XCTAssertEqual(command.encoded(), Array("*3\r\n$1\r\nX\r\n$1\r\na\r\n$2\r\nbc\r\n".utf8))
    }

    func testReplyParserHandlesFragmentsAndAllTypes() throws {
        let stream = Array("+OK\r\n-NOSCRIPT No matching script\r\n:-7\r\n$3\r\na\r\n\r\n$-1\r\n*3\r\n$2\r\nok\r\n*-1\r\n:1\r\n".utf8)
        let parser = try XCTUnwrap(RedisReplyParser())
        var replies = [RedisReply]()
        for byte in stream {  // one byte at a time: every reply must survive arbitrary fragmentation
            try [byte].withUnsafeBytes { try parser.feed($0) }
            while let reply = try parser.next() { replies.append(reply) }
        }
        XCTAssertEqual(replies, [
            .status(Array("OK".utf8)), .error(Array("NOSCRIPT No matching script".utf8)), .integer(-7),
            .bulk([0x61, 0x0d, 0x0a]), .null, .array([.bulk(Array("ok".utf8)), .null, .integer(1)]),
        ])
        XCTAssertEqual(replies[1].errorCode, "NOSCRIPT")
        XCTAssertTrue(replies[0].isText("OK"))
    }

    func testReplyParserRejectsGarbage() throws {
        let parser = try XCTUnwrap(RedisReplyParser())
        try Array("?what\r\n".utf8).withUnsafeBytes { try parser.feed($0) }
        XCTAssertThrowsError(try parser.next())
    }

    func testDecimalHelpers() {
        for value: Int64 in [0, 1, -1, 9, 10, 11, 42, 99, 100, 101, -99, -100, 4_294_967_295, 1_764_000_000_000, .max, .min + 1, .min] {
            XCTAssertEqual(RedisCommand.parseDecimal(Array(String(value).utf8)), value)
        }
        for bad in ["", "-", "1a", "+1", " 1", "99999999999999999999", "1.5", "9223372036854775808",
                    "-9223372036854775809", "18446744073709551616"] {
            XCTAssertNil(RedisCommand.parseDecimal(Array(bad.utf8)), bad)
        }
    }

    func testScriptSHAsMatchTheirBodies() throws {
        // Independent SHA-1 (Python's hashlib); the connect handshake also checks them against SCRIPT LOAD.
        for script in RedisScript.all {
            let result = try ChildProcess.run("python3", ["-c", "import sys,hashlib;print(hashlib.sha1(sys.stdin.buffer.read()).hexdigest())"],
                                              stdin: Data(script.body))
            XCTAssertEqual(result.output.trimmingCharacters(in: .whitespacesAndNewlines), String(decoding: script.sha1, as: UTF8.self))
        }
    }

    func testBackoffIsJitteredGrowingAndCapped() {
        let backoff = ReconnectBackoff(base: 50_000_000, cap: 2_000_000_000)
        XCTAssertEqual(backoff.delay(attempt: 1, unit: 0), 25_000_000)
        XCTAssertEqual(backoff.delay(attempt: 1, unit: 0.999_999_9), 49_999_975)
        XCTAssertEqual(backoff.delay(attempt: 3, unit: 0), 100_000_000)
        XCTAssertEqual(backoff.delay(attempt: 6, unit: 0), 800_000_000)  // 50 ms * 2^5 = 1.6 s, not yet capped
        for attempt in [7, 50, 10_000] {
            for unit in [0.0, 0.5, 0.99] {
                let delay = backoff.delay(attempt: attempt, unit: unit)
                XCTAssertGreaterThanOrEqual(delay, 1_000_000_000)
                XCTAssertLessThanOrEqual(delay, 2_000_000_000)
            }
        }
    }
}
