import GatewayRedis

/// `resp`: `RedisReplyParser` (hiredis' redisReader behind our wrapper) on arbitrary bytes from
/// "the Redis server". Framed input: `splitSeed(1) stream...`.
///
/// Invariants: feeding the stream at once and in pieces yields the same replies and the same
/// error/no-error outcome; after an error no reply is produced; replies are bounded by the input
/// (a reply tree never holds more nodes than the input has bytes, so a few bytes cannot make the
/// gateway allocate much: libFuzzer's -malloc_limit_mb catches allocations out of proportion).
enum RESPHarness {
    static let harness = Harness(name: "resp", summary: "RedisReplyParser (hiredis reader) whole vs split") { run($0) }

    struct Outcome: Equatable {
        var replies: [RedisReply] = []
        var failed = false
    }

    static func parse(_ pieces: [ArraySlice<UInt8>]) -> Outcome {
        var outcome = Outcome()
        guard let parser = RedisReplyParser() else { Invariant.fail("resp", "hiredis reader could not be created") }
        for piece in pieces {
            do {
                try Array(piece).withUnsafeBytes { try parser.feed($0) }
                while let reply = try parser.next() {
                    outcome.replies.append(reply)
                    Invariant.check(outcome.replies.count <= 1 + pieces.reduce(0) { $0 + $1.count }, "resp", "more replies than input bytes")
                }
            } catch {
                outcome.failed = true
                return outcome
            }
        }
        return outcome
    }

    static func nodes(_ reply: RedisReply) -> Int {
        if case .array(let items) = reply { return 1 + items.reduce(0) { $0 + nodes($1) } }
        return 1
    }

    static func run(_ input: [UInt8]) {
        var reader = FuzzInput(input)
        let seed = reader.u8()
        let stream = reader.rest()
        let whole = parse([stream[...]])
        for reply in whole.replies {
            Invariant.check(nodes(reply) <= stream.count, "resp", "a reply of \(nodes(reply)) nodes from \(stream.count) bytes")
        }
        var pieces: [ArraySlice<UInt8>] = []
        var plan = SplitPlan(seed: UInt64(seed) << 32 | UInt64(stream.count))
        var offset = 0
        while offset < stream.count {
            let n = plan.next(max: stream.count - offset)
            pieces.append(stream[offset..<(offset + n)])
            offset += n
        }
        let split = parse(pieces)
        Invariant.check(whole == split, "resp", "whole and split parses differ: \(whole) vs \(split)")
    }
}
