/// One RESP2 reply (Redis protocol specification, "RESP protocol description"), copied out of hiredis'
/// reply tree. Strings stay bytes: keys, challenges and records are binary.
public enum RedisReply: Equatable, Sendable {
    /// `+...` simple string (e.g. `OK`, `PONG`).
    case status([UInt8])
    /// `-...` error reply (e.g. `NOSCRIPT ...`, `OOM ...`, `READONLY ...`).
    case error([UInt8])
    /// `:...` integer.
    case integer(Int64)
    /// `$...` bulk string.
    case bulk([UInt8])
    /// `$-1` / `*-1` null.
    case null
    /// `*...` array.
    indirect case array([RedisReply])

    /// For an error reply: its first word (`OOM`, `NOSCRIPT`, `READONLY`, `ERR`...).
    public var errorCode: String? {
        guard case .error(let bytes) = self else { return nil }
        return String(decoding: bytes.prefix { $0 != 0x20 }, as: UTF8.self)
    }

    /// For status and bulk replies: whether the bytes equal `text`.
    public func isText(_ text: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
        switch self {
        case .status(let bytes), .bulk(let bytes): return bytes.elementsEqual(expected)
        default: return false
        }
    }
}
