import CHiredis

/// Incremental RESP reply parser: hiredis' `redisReader` (read.h) fed with the bytes read from the
/// socket, handing out complete replies as `RedisReply` values.
///
/// Not thread-safe: owned by one `RedisConnection` and used only on its serial queue. Public so
/// that the fuzzing harness (Fuzz/, `attest-fuzz resp`) reaches it without `@testable`.
///
/// Array replies are bounded: hiredis 0.14 (Debian 12) has no `maxelements` and allocates
/// `8 * count` bytes as soon as it reads an array header - 16 GiB for the 14 bytes
/// `*2147483647\r\n`, walked again when freed - so the reader's `createArray` callback is wrapped
/// to refuse counts above `maximumArrayElements` (the gateway's replies have a few dozen at most).
public final class RedisReplyParser {
    /// Most elements one array reply may declare; a larger count is a `ProtocolError`.
    public static let maximumArrayElements: Int32 = 1024

    /// hiredis' own `createArray` and the last refused count, reached from the callback through
    /// the reader's `privdata` (copied into every read task).
    private struct ArrayGuard {
        var createArray: (@convention(c) (UnsafePointer<redisReadTask>?, Int32) -> UnsafeMutableRawPointer?)?
        var refusedCount: Int32 = 0
    }

    private let reader: UnsafeMutablePointer<redisReader>
    private let functions: UnsafeMutablePointer<redisReplyObjectFunctions>
    private let arrayGuard: UnsafeMutablePointer<ArrayGuard>

    /// Errors of the parser: the byte stream is not RESP (the connection must be reset).
    public struct ProtocolError: Error {
        /// hiredis' error text.
        public let detail: String
    }

    /// - Returns: nil when hiredis cannot allocate a reader.
    public init?() {
        guard let reader = redisReaderCreate() else { return nil }
        guard let defaults = reader.pointee.fn else {
            redisReaderFree(reader)
            return nil
        }
        self.reader = reader
        functions = .allocate(capacity: 1)
        functions.initialize(to: defaults.pointee)
        arrayGuard = .allocate(capacity: 1)
        arrayGuard.initialize(to: ArrayGuard(createArray: defaults.pointee.createArray))
        functions.pointee.createArray = { task, count in
            guard let task, let state = task.pointee.privdata?.assumingMemoryBound(to: ArrayGuard.self) else { return nil }
            guard count <= RedisReplyParser.maximumArrayElements else {
                state.pointee.refusedCount = count
                return nil  // hiredis then fails the reader (reported by `error()`)
            }
            return state.pointee.createArray?(task, count)
        }
        reader.pointee.fn = functions
        reader.pointee.privdata = UnsafeMutableRawPointer(arrayGuard)
    }

    deinit {
        redisReaderFree(reader)
        functions.deallocate()
        arrayGuard.deinitialize(count: 1)
        arrayGuard.deallocate()
    }

    /// Appends bytes received from the server.
    /// - Throws: `ProtocolError` when hiredis refuses the bytes.
    public func feed(_ bytes: UnsafeRawBufferPointer) throws {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        guard redisReaderFeed(reader, base.assumingMemoryBound(to: CChar.self), bytes.count) == REDIS_OK else { throw error() }
    }

    /// The next complete reply, or nil when more bytes are needed.
    /// - Throws: `ProtocolError` when the stream is not RESP; the parser must then be discarded.
    public func next() throws -> RedisReply? {
        var raw: UnsafeMutableRawPointer?
        guard redisReaderGetReply(reader, &raw) == REDIS_OK else { throw error() }
        guard let raw else { return nil }
        defer { freeReplyObject(raw) }
        return RedisReplyParser.convert(raw.assumingMemoryBound(to: redisReply.self))
    }

    private func error() -> ProtocolError {
        if arrayGuard.pointee.refusedCount > 0 {
            return ProtocolError(detail: "array reply of \(arrayGuard.pointee.refusedCount) elements exceeds \(Self.maximumArrayElements)")
        }
        let detail = withUnsafeBytes(of: reader.pointee.errstr) { buffer in
            String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
        }
        return ProtocolError(detail: detail.isEmpty ? "protocol error" : detail)
    }

    private static func bytes(_ reply: UnsafeMutablePointer<redisReply>) -> [UInt8] {
        guard let str = reply.pointee.str, reply.pointee.len > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: str, count: reply.pointee.len))
    }

    private static func convert(_ reply: UnsafeMutablePointer<redisReply>) -> RedisReply {
        switch reply.pointee.type {
        case REDIS_REPLY_STATUS: return .status(bytes(reply))
        case REDIS_REPLY_ERROR: return .error(bytes(reply))
        case REDIS_REPLY_INTEGER: return .integer(reply.pointee.integer)
        case REDIS_REPLY_STRING: return .bulk(bytes(reply))
        case REDIS_REPLY_ARRAY:
            var elements = [RedisReply]()
            elements.reserveCapacity(reply.pointee.elements)
            if let element = reply.pointee.element {
                for i in 0..<reply.pointee.elements {
                    if let child = element[i] { elements.append(convert(child)) } else { elements.append(.null) }
                }
            }
            return .array(elements)
        default: return .null
        }
    }
}
