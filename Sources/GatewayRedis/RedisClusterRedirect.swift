import GatewayRules

/// The cluster error replies a command can get instead of its answer (Redis Cluster specification,
/// "Redirection and resharding", "Multi-keys operations"), read from the reply's bytes:
/// - `MOVED <slot> <host>:<port>`: the slot now lives on that node for good (refresh the map);
/// - `ASK <slot> <host>:<port>`: the slot is being migrated; send this one command there, preceded by
///   `ASKING`, without changing the map;
/// - `TRYAGAIN ...`: a multi-key command during a migration; nothing ran, retry shortly;
/// - `CLUSTERDOWN ...`: the cluster cannot serve the slot now (no primary, failover in progress).
/// An empty host (`MOVED 1 :7000`) means the host of the node that answered (`fallbackHost`).
enum RedisClusterRedirect: Equatable, Sendable {
    case moved(slot: Int, to: RedisURL.Endpoint)
    case ask(slot: Int, to: RedisURL.Endpoint)
    case tryAgain
    case clusterDown

    /// nil when `reply` is not one of the cluster error replies (or a malformed one).
    init?(_ reply: RedisReply, fallbackHost: String) {
        guard case .error(let bytes) = reply else { return nil }
        let words = bytes.split(separator: 0x20, maxSplits: 3, omittingEmptySubsequences: true)
        guard let first = words.first else { return nil }
        switch String(decoding: first, as: UTF8.self) {
        case "TRYAGAIN": self = .tryAgain
        case "CLUSTERDOWN": self = .clusterDown
        case let kind where kind == "MOVED" || kind == "ASK":
            guard words.count >= 3, let slot64 = RedisCommand.parseDecimal(words[1]),
                  slot64 >= 0, slot64 < Int64(RedisClusterSlot.count),
                  let endpoint = RedisClusterRedirect.endpoint(words[2], fallbackHost: fallbackHost) else { return nil }
            self = kind == "MOVED" ? .moved(slot: Int(slot64), to: endpoint) : .ask(slot: Int(slot64), to: endpoint)
        default:
            return nil
        }
    }

    /// `host:port` (an IPv6 host without brackets: the port follows the last colon).
    static func endpoint(_ bytes: ArraySlice<UInt8>, fallbackHost: String) -> RedisURL.Endpoint? {
        guard let colon = bytes.lastIndex(of: 0x3a),
              let port = RedisCommand.parseDecimal(bytes[(colon + 1)...]), port > 0, port <= Int64(UInt16.max) else { return nil }
        var host = String(decoding: bytes[..<colon], as: UTF8.self)
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.isEmpty { host = fallbackHost }
        return .tcp(host: host.lowercased(), port: UInt16(port))
    }
}
