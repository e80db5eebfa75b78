import AttestCrypto
import GatewayIO

/// Request ids the gateway mints when it does not take one from a trusted proxy: 32 lower-case hex
/// digits, a random 64-bit prefix drawn per event loop at start followed by that loop's 64-bit
/// counter, so ids are unique across loops and (with overwhelming probability) across replicas
/// and restarts, and minting one costs a counter increment and one string (no system call). The
/// counter also counts every request begun, for the in-flight gauge (one per-loop lock per request
/// for both).
/// Not secrets and not unpredictable: never use one as a token.
final class RequestIDGenerator: Sendable {
    private struct State {
        let prefix: UInt64
        var counter: UInt64 = 0
    }

    private let shards: PerLoop<State>

    /// One prefix per loop (from the system's random source; a clock-derived one if it fails).
    init(loops: Int) {
        shards = PerLoop(count: loops) {
            let bytes = (try? SecureRandom.bytes(count: 8)) ?? withUnsafeBytes(of: EventLoop.now()) { Array($0) }
            return State(prefix: bytes.reduce(0) { $0 << 8 | UInt64($1) })
        }
    }

    /// Counts one request (its head was decided) on loop `loop` and returns its id material; format
    /// it with `id(_:)` only when the id is needed (a trusted proxy's id may be used instead).
    func begin(loop: Int) -> (prefix: UInt64, sequence: UInt64) {
        shards.withShard(loop) { state -> (prefix: UInt64, sequence: UInt64) in
            state.counter &+= 1
            return (state.prefix, state.counter)
        }
    }

    /// Requests begun on every loop (the in-flight gauge subtracts the completed ones).
    var begun: UInt64 {
        var total: UInt64 = 0
        shards.forEach { total &+= $0.counter }
        return total
    }

    /// The next id of loop `loop` (counted as a request begun).
    func next(loop: Int) -> String { RequestIDGenerator.id(begin(loop: loop)) }

    /// 32 lower-case hex digits: prefix, then sequence.
    static func id(_ material: (prefix: UInt64, sequence: UInt64)) -> String {
        String(unsafeUninitializedCapacity: 32) { buffer in
            hex(material.prefix, into: buffer, at: 0)
            hex(material.sequence, into: buffer, at: 16)
            return 32
        }
    }

    private static func hex(_ value: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at offset: Int) {
        for i in 0..<16 {
            let nibble = UInt8((value >> UInt64(60 - 4 * i)) & 0xF)
            buffer[offset + i] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble
        }
    }
}
