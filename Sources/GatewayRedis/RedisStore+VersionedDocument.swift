import GatewayStore

/// A small versioned document under a key of its own (a hash `{v, doc}`), replaced only by a
/// compare-and-set, so that replicas sharing a Redis agree on one value: the fleet's verdict-signing
/// key set (issue 12, `Gateway.VerdictTokenSigner`). Rare operations (the gateway looks at its key set
/// every few seconds at most), so the script is sent with `EVAL` rather than loaded at connect.
extension RedisStore {
    /// `HSET` only when the stored version is ARGV[1] (`0`: the key is absent). KEYS[1] the document.
    /// ARGV: expected version, new version, document. Returns 1 when written, 0 when another writer
    /// was first.
    private static let replaceScript: [UInt8] = Array("""
        local v = redis.call('HGET', KEYS[1], 'v')
        if (v or '0') ~= ARGV[1] then return 0 end
        redis.call('HSET', KEYS[1], 'v', ARGV[2], 'doc', ARGV[3])
        return 1
        """.utf8)

    /// The document under `key` and its version; nil when absent.
    public func fetchVersionedDocument(key: [UInt8],
                                       completion: @escaping @Sendable (Result<(version: Int64, document: [UInt8])?, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 64)
        command.append("HMGET")
        command.append(key)
        command.append("v")
        command.append("doc")
        send(command, key: key) { result in
            completion(RedisStore.failErrorReplies(result).flatMap { reply in
                guard case .array(let values) = reply, values.count == 2 else { return .failure(RedisStore.unexpected(reply)) }
                if values[0] == .null && values[1] == .null { return .success(nil) }
                guard case .bulk(let v) = values[0], let version = RedisCommand.parseDecimal(v),
                      case .bulk(let document) = values[1] else { return .failure(RedisStore.unexpected(reply)) }
                return .success((version, document))
            })
        }
    }

    /// Writes `document` as version `expected + 1` when the stored version is `expected` (0: absent).
    /// - completion: true when written; false when another writer changed it first (read it again).
    public func replaceVersionedDocument(key: [UInt8], expected: Int64, document: [UInt8],
                                         completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: RedisStore.replaceScript.count + document.count + 64)
        command.append("EVAL")
        command.append(RedisStore.replaceScript)
        command.append(decimal: 1)
        command.append(key)
        command.append(decimal: expected)
        command.append(decimal: expected + 1)
        command.append(document)
        send(command, key: key) { result in
            completion(RedisStore.failErrorReplies(result).flatMap { reply in
                guard case .integer(let written) = reply else { return .failure(RedisStore.unexpected(reply)) }
                return .success(written == 1)
            })
        }
    }
}
