import GatewayRules
import GatewayStore

/// Operator actions for `attestctl keys` (issue 9 "attestctl for operators"), beyond the request
/// path's `AttestStore` operations: walking the key records, reading and writing revocation audit
/// fields. With a Redis Cluster the walk visits every primary in turn (SCAN walks one node).
extension RedisStore {
    /// One `SCAN cursor MATCH <prefix>:{*}:key COUNT count` step.
    /// - Returns: the next cursor (`"0"` when the walk is over) and the keyIds (base64url, as they
    ///   appear in the key names) of this batch. Like SCAN, a record present during the whole walk is
    ///   returned at least once; the same keyId may come twice.
    /// - Cluster: the cursor is still one decimal: the primary's position (primaries ordered by
    ///   `host:port`) times 2^48 plus that node's SCAN cursor. A reshard or failover during the walk
    ///   can skip or repeat records of the slots that moved.
    public func scanKeyRecords(cursor: String, count: Int,
                               completion: @escaping @Sendable (Result<(cursor: String, keyIds: [String]), StoreUnavailable>) -> Void) {
        if isCluster { return scanClusterKeyRecords(cursor: cursor, count: count, completion: completion) }
        sendScan(cursor: cursor, count: count, to: nil, completion: completion)
    }

    private static let nodeShift: UInt64 = 48

    private func scanClusterKeyRecords(cursor: String, count: Int,
                                       completion: @escaping @Sendable (Result<(cursor: String, keyIds: [String]), StoreUnavailable>) -> Void) {
        guard let value = UInt64(cursor) else {
            return completion(.failure(StoreUnavailable(.protocolError, detail: "malformed cluster cursor \(cursor)")))
        }
        let node = Int(value >> RedisStore.nodeShift)
        let nodeCursor = value & ((1 << RedisStore.nodeShift) - 1)
        clusterPrimaries { [self] primaries in
            let ordered = primaries.sorted { RedisURL.hostPort($0) < RedisURL.hostPort($1) }
            guard !ordered.isEmpty else {
                return completion(.failure(StoreUnavailable(.notConnected, detail: "no Redis Cluster map")))
            }
            guard node < ordered.count else { return completion(.success(("0", []))) }
            sendScan(cursor: String(nodeCursor), count: count, to: ordered[node]) { result in
                completion(result.flatMap { step in
                    guard let next = UInt64(step.cursor), next < (1 << RedisStore.nodeShift) else {
                        return .failure(StoreUnavailable(.protocolError, detail: "SCAN cursor \(step.cursor) out of range"))
                    }
                    if next != 0 { return .success((String(UInt64(node) << RedisStore.nodeShift | next), step.keyIds)) }
                    let following = node + 1
                    return .success((following < ordered.count ? String(UInt64(following) << RedisStore.nodeShift) : "0", step.keyIds))
                })
            }
        }
    }

    private func sendScan(cursor: String, count: Int, to node: RedisURL.Endpoint?,
                          completion: @escaping @Sendable (Result<(cursor: String, keyIds: [String]), StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 64)
        command.append("SCAN")
        command.append(cursor.utf8)
        command.append("MATCH")
        command.append(schema.prefix + Array(":{*}:key".utf8))
        command.append("COUNT")
        command.append(decimal: Int64(max(1, count)))
        let prefix = schema.prefix.count + 2
        let handle: RedisCompletion = { result in
            completion(result.flatMap { reply in
                guard case .array(let items) = reply, items.count == 2, case .bulk(let next) = items[0],
                      case .array(let names) = items[1] else {
                    return .failure(RedisStore.unexpected(reply))
                }
                var keyIds: [String] = []
                for name in names {
                    guard case .bulk(let bytes) = name, bytes.count > prefix + 5 else { continue }
                    keyIds.append(String(decoding: bytes[prefix..<(bytes.count - 5)], as: UTF8.self))
                }
                return .success((String(decoding: next, as: UTF8.self), keyIds))
            })
        }
        if let node {
            sendToNode(command, node: node, completion: handle)
        } else {
            send(command, key: nil, completion: handle)
        }
    }

    /// The revocation audit fields of a key record (`HMGET revoked_at revoked_reason revoked_by`);
    /// nil when none is set.
    public func fetchRevocation(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRevocation?, StoreUnavailable>) -> Void) {
        var command = RedisCommand(capacity: 128)
        command.append("HMGET")
        command.append(schema.keyRecordName(keyId))
        command.append("revoked_at")
        command.append("revoked_reason")
        command.append("revoked_by")
        send(command, key: schema.keyRecordName(keyId)) { result in
            completion(result.flatMap { reply in
                guard case .array(let values) = reply, values.count == 3 else { return .failure(RedisStore.unexpected(reply)) }
                func text(_ i: Int) -> String? { if case .bulk(let b) = values[i] { return String(decoding: b, as: UTF8.self) }; return nil }
                if values.allSatisfy({ $0 == .null }) { return .success(nil) }
                var at: Int64?
                if case .bulk(let b) = values[0] { at = RedisCommand.parseDecimal(b) }
                return .success(KeyRevocation(at: at, reason: text(1), revokedBy: text(2)))
            })
        }
    }

    /// Revokes a key with its audit trail (one Lua script): `status` becomes `revoked`, `revoked_at`
    /// is `now` (unix ms), and `reason` / `revokedBy` are recorded when given (non-empty). A key that
    /// is already revoked is left as it is (`.alreadyRevoked`). Gateways answer `403 key_revoked`
    /// from their next request on.
    public func revokeKey(_ keyId: KeyID, reason: String?, revokedBy: String?, now: Int64,
                          completion: @escaping @Sendable (Result<KeyRevocationOutcome, StoreUnavailable>) -> Void) {
        var args = RedisCommand(capacity: 64 + (reason?.utf8.count ?? 0) + (revokedBy?.utf8.count ?? 0))
        args.append(decimal: now)
        args.append((reason ?? "").utf8)
        args.append((revokedBy ?? "").utf8)
        runScriptRouted(.revokeAudited, keys: [schema.keyRecordName(keyId)], args: args) { [self] result, connection in
            if case .success(.integer(1)) = result, waitReplicas > 0 {
                return afterReplicas(KeyRevocationOutcome.revoked, on: connection, completion: completion)
            }
            completion(result.flatMap { reply in
                switch reply {
                case .integer(1): return .success(.revoked)
                case .integer(2): return .success(.alreadyRevoked)
                case .integer(0): return .success(.notFound)
                default: return .failure(RedisStore.unexpected(reply))
                }
            })
        }
    }
}
