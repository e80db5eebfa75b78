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
    /// - Cluster: the primaries are walked in the order of the lowest slot each serves, and the cursor
    ///   names the node being walked by that slot, not by its address or position:
    ///   `<lowest slot>.<SCAN cursor>.<node tag>` (the tag: a hash of the node's `host:port`). A failover
    ///   (a replica promoted serves the same slots) therefore never makes the walk skip a primary;
    ///   when the slot's primary is no longer the tagged node, its walk starts again from 0 on the new
    ///   one (records repeat, none is missed). A reshard during the walk can still skip or repeat
    ///   records of the slots that moved (SCAN walks one node's keys).
    public func scanKeyRecords(cursor: String, count: Int,
                               completion: @escaping @Sendable (Result<(cursor: String, keyIds: [String]), StoreUnavailable>) -> Void) {
        if isCluster { return scanClusterKeyRecords(cursor: cursor, count: count, completion: completion) }
        sendScan(cursor: cursor, count: count, to: nil, completion: completion)
    }

    /// Whether the server behind a standalone URL is a Redis Cluster node (`INFO cluster` reads
    /// `cluster_enabled:1`): through it, a walk sees one node's keys and a key of another node
    /// answers MOVED. Always false for a cluster store.
    public func isClusterNode(completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) {
        guard !isCluster else { return completion(.success(false)) }
        var command = RedisCommand(capacity: 32)
        command.append("INFO")
        command.append("cluster")
        send(command, key: nil) { result in
            completion(result.flatMap { reply in
                guard case .bulk(let text) = reply else { return .failure(RedisStore.unexpected(reply)) }
                return .success(String(decoding: text, as: UTF8.self).contains("cluster_enabled:1"))
            })
        }
    }

    /// Whether `cursor` has the form `scanKeyRecords` prints for this kind of store: a decimal for one
    /// Redis, `0` or `<slot>.<decimal>.<hex tag>` for a Redis Cluster (`attestctl keys list --cursor`
    /// refuses anything else as a usage error).
    public static func isKeyWalkCursor(_ cursor: String, cluster: Bool) -> Bool {
        guard cluster, cursor != "0" else { return UInt64(cursor) != nil }
        return clusterCursor(cursor) != nil
    }

    /// The parts of a cluster walk cursor `<slot>.<SCAN cursor>.<node tag>`; nil when malformed.
    private static func clusterCursor(_ cursor: String) -> (anchor: Int, scan: UInt64, tag: String)? {
        let parts = cursor.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let slot = Int(parts[0]), (0..<RedisClusterSlot.count).contains(slot),
              let scan = UInt64(parts[1]), !parts[2].isEmpty, parts[2].allSatisfy(\.isHexDigit) else { return nil }
        return (slot, scan, String(parts[2]))
    }

    /// The tag of a node in a cluster cursor: FNV-1a 64 of its `host:port`, hex.
    static func nodeTag(_ endpoint: RedisURL.Endpoint) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in RedisURL.hostPort(endpoint).utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    private func scanClusterKeyRecords(cursor: String, count: Int,
                                       completion: @escaping @Sendable (Result<(cursor: String, keyIds: [String]), StoreUnavailable>) -> Void) {
        let from = cursor == "0" ? nil : RedisStore.clusterCursor(cursor)
        guard cursor == "0" || from != nil else {
            return completion(.failure(StoreUnavailable(.protocolError, detail: "malformed cluster cursor \(cursor)")))
        }
        clusterSlotTable { [self] table in
            let ordered = table.primariesByLowestSlot
            guard !ordered.isEmpty else {
                // Say why: every seed refused, or a seed that is no cluster node ("cluster support
                // disabled": a redis+cluster:// URL naming a standalone Redis).
                let why = clusterMapFailure.map { " (\($0))" } ?? ""
                return completion(.failure(StoreUnavailable(.notConnected, detail: "no Redis Cluster map\(why)")))
            }
            var index = 0
            var nodeCursor: UInt64 = 0
            if let from {
                guard let owner = table.primary(ofSlot: from.anchor), let at = ordered.firstIndex(where: { $0.endpoint == owner }) else {
                    return completion(.failure(StoreUnavailable(.notConnected, detail: "no primary serves slot \(from.anchor) (cluster down?)")))
                }
                index = at
                // Another node serves the slot now (a failover): its SCAN cursor means nothing
                // there, so that node is walked from the start.
                nodeCursor = RedisStore.nodeTag(owner) == from.tag ? from.scan : 0
            }
            let node = ordered[index]
            let following = index + 1 < ordered.count ? ordered[index + 1] : nil
            sendScan(cursor: String(nodeCursor), count: count, to: node.endpoint) { result in
                completion(result.map { step in
                    if step.cursor != "0" {
                        return ("\(node.lowestSlot).\(step.cursor).\(RedisStore.nodeTag(node.endpoint))", step.keyIds)
                    }
                    guard let following else { return ("0", step.keyIds) }
                    return ("\(following.lowestSlot).0.\(RedisStore.nodeTag(following.endpoint))", step.keyIds)
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
