import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Random bytes from OpenSSL's CSPRNG (`RAND_bytes`, through `SecureRandom`) drawn a block at a
/// time and handed out in order, each byte once: one `RAND_bytes` call per `blockSize` bytes
/// instead of one per value. For values minted on every request (challenges): OpenSSL 3's
/// `RAND_bytes` costs about as much for 32 bytes as for 4 KiB (a `getpid` system call, locks,
/// parameter look-ups and a cipher re-initialisation per call).
///
/// The output is the CSPRNG's, unchanged and never reused: handed-out bytes are zeroed in the block
/// at once, so the pool only ever holds bytes no caller has seen. Not for long-term secrets that must
/// not sit in process memory before use (the process's memory already holds the DRBG state).
///
/// Fork-safe: a `fork(2)` copies the block into the child, and both processes would then hand out
/// the same bytes. A `pthread_atfork(3)` child handler (registered with the first pool) advances a
/// process-wide fork generation, and a block drawn in an earlier generation is dropped unused, so
/// after a fork the child draws its own block from OpenSSL (whose DRBG reseeds after a fork) and
/// never serves the parent's. The check is one relaxed atomic load per call.
///
/// **Thread-safe**: the block and its read offset are guarded by `state`'s lock.
public final class RandomBytePool: Sendable {
    private struct Block {
        var bytes: [UInt8] = []
        var offset = 0
        /// `RandomBytePool.forkGeneration` when `bytes` was drawn.
        var generation: UInt64 = 0
    }

    /// Advanced in the child after every `fork(2)` (the handler `registerForkHandler` installs).
    private static let forkGeneration = Atomic<UInt64>(0)
    /// Installs the child handler once per process (with the first pool).
    private static let registerForkHandler: Void = {
        _ = pthread_atfork(nil, nil, { RandomBytePool.forkGeneration.add(1, ordering: .relaxed) })
    }()

    /// Bytes drawn from the CSPRNG per refill (a request larger than this is drawn on its own).
    public let blockSize: Int
    private let state = Mutex(Block())

    /// - Parameter blockSize: bytes per `RAND_bytes` call (at least 1; default 4096).
    public init(blockSize: Int = 4096) {
        self.blockSize = max(1, blockSize)
        _ = RandomBytePool.registerForkHandler
    }

    /// `count` fresh random bytes.
    /// - Throws: `CryptoError.invalidArgument` for a negative count, `CryptoError.openSSLFailure`
    ///   when the CSPRNG fails (as `SecureRandom.bytes`).
    public func bytes(count: Int) throws -> [UInt8] {
        guard count >= 0 else { throw CryptoError.invalidArgument("count \(count)") }
        guard count > 0 else { return [] }
        guard count <= blockSize else { return try SecureRandom.bytes(count: count) }
        let blockSize = self.blockSize
        let generation = RandomBytePool.forkGeneration.load(ordering: .relaxed)
        return try state.withLock { (block: inout Block) throws -> [UInt8] in
            if block.bytes.count - block.offset < count || block.generation != generation {
                block.bytes = try SecureRandom.bytes(count: blockSize)
                block.offset = 0
                block.generation = generation
            }
            let start = block.offset
            block.offset += count
            return block.bytes.withUnsafeMutableBufferPointer { buffer in
                let range = start..<(start + count)
                let out = Array(buffer[range])
                // Handed out once: the pool keeps no copy.
                for i in range { buffer[i] = 0 }
                return out
            }
        }
    }
}
