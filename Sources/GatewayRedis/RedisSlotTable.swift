import GatewayRules

/// Which node serves each of the 16384 slots of a Redis Cluster: a value read from `CLUSTER SLOTS`
/// (Redis command reference) and patched by `MOVED` redirects. No I/O.
///
/// `nodes` holds every primary named by the map (each once, by endpoint); `slots[s]` is the index in
/// `nodes` of the primary of slot `s`, or `unassigned`. Replicas are kept per primary (refresh
/// candidates); commands only go to primaries.
struct RedisSlotTable: Equatable, Sendable {
    /// One primary and its replicas as `CLUSTER SLOTS` lists them.
    struct Node: Equatable, Sendable {
        var endpoint: RedisURL.Endpoint
        var replicas: [RedisURL.Endpoint]
    }

    /// Why a `CLUSTER SLOTS` reply was refused.
    struct ParseError: Error, Equatable, CustomStringConvertible {
        let description: String
    }

    /// `slots` value of a slot no primary serves.
    static let unassigned = UInt16.max

    private(set) var nodes: [Node]
    private(set) var slots: [UInt16]

    /// An empty map: every slot unassigned.
    init() {
        nodes = []
        slots = Array(repeating: RedisSlotTable.unassigned, count: RedisClusterSlot.count)
    }

    /// The primary of `slot`, nil when unassigned.
    func primary(ofSlot slot: Int) -> RedisURL.Endpoint? {
        let index = slots[slot]
        return index == RedisSlotTable.unassigned ? nil : nodes[Int(index)].endpoint
    }

    /// Every primary serving at least one slot, in map order.
    var primaries: [RedisURL.Endpoint] { nodes.map { $0.endpoint } }

    /// Every primary with the lowest slot it serves, ordered by that slot: the order of a walk over
    /// the primaries that a failover does not change (a promoted replica serves the same slots).
    var primariesByLowestSlot: [(endpoint: RedisURL.Endpoint, lowestSlot: Int)] {
        var lowest = [Int](repeating: Int.max, count: nodes.count)
        for (slot, index) in slots.enumerated() where index != RedisSlotTable.unassigned && lowest[Int(index)] == Int.max {
            lowest[Int(index)] = slot
        }
        return nodes.indices.filter { lowest[$0] != Int.max }
            .map { (nodes[$0].endpoint, lowest[$0]) }
            .sorted { $0.lowestSlot < $1.lowestSlot }
    }

    /// Number of slots some primary serves (16384 for a healthy cluster).
    var coveredSlots: Int { slots.reduce(0) { $0 + ($1 == RedisSlotTable.unassigned ? 0 : 1) } }

    /// Records a `MOVED slot endpoint` redirect: `slot` is now served by `endpoint` (a primary left
    /// with no slot is dropped).
    mutating func move(slot: Int, to endpoint: RedisURL.Endpoint) {
        guard slot >= 0 && slot < RedisClusterSlot.count else { return }
        let index: Int
        if let existing = nodes.firstIndex(where: { $0.endpoint == endpoint }) {
            index = existing
        } else {
            nodes.append(Node(endpoint: endpoint, replicas: []))
            index = nodes.count - 1
        }
        slots[slot] = UInt16(index)
        dropUnusedNodes()
    }

    /// Reads a `CLUSTER SLOTS` reply: an array of `[start, end, [host, port, id...], replicas...]`.
    /// - Parameter fallbackHost: the host for a node that reports none (`""` or `?`: the host the reply
    ///   came from).
    /// - Throws: `ParseError` for a malformed reply (ranges out of 0...16383, a missing port...).
    init(clusterSlots reply: RedisReply, fallbackHost: String) throws(ParseError) {
        self.init()
        guard case .array(let ranges) = reply else { throw ParseError(description: "CLUSTER SLOTS: not an array") }
        for range in ranges {
            guard case .array(let items) = range, items.count >= 3,
                  case .integer(let start) = items[0], case .integer(let end) = items[1],
                  start >= 0, end >= start, end < Int64(RedisClusterSlot.count) else {
                throw ParseError(description: "CLUSTER SLOTS: malformed slot range")
            }
            let primary = try RedisSlotTable.endpoint(items[2], fallbackHost: fallbackHost)
            var replicas: [RedisURL.Endpoint] = []
            for item in items.dropFirst(3) { replicas.append(try RedisSlotTable.endpoint(item, fallbackHost: fallbackHost)) }
            let index: Int
            if let existing = nodes.firstIndex(where: { $0.endpoint == primary }) {
                index = existing
                for replica in replicas where !nodes[index].replicas.contains(replica) { nodes[index].replicas.append(replica) }
            } else {
                nodes.append(Node(endpoint: primary, replicas: replicas))
                index = nodes.count - 1
            }
            for slot in Int(start)...Int(end) { slots[slot] = UInt16(index) }
        }
        dropUnusedNodes()
    }

    /// `[host, port, ...]` of one node in `CLUSTER SLOTS`.
    private static func endpoint(_ reply: RedisReply, fallbackHost: String) throws(ParseError) -> RedisURL.Endpoint {
        guard case .array(let parts) = reply, parts.count >= 2, case .integer(let port) = parts[1],
              port > 0, port <= Int64(UInt16.max) else {
            throw ParseError(description: "CLUSTER SLOTS: malformed node")
        }
        var host: String
        switch parts[0] {
        case .bulk(let bytes): host = String(decoding: bytes, as: UTF8.self)
        case .null: host = ""
        default: throw ParseError(description: "CLUSTER SLOTS: malformed node host")
        }
        if host.isEmpty || host == "?" { host = fallbackHost }
        return .tcp(host: host.lowercased(), port: UInt16(port))
    }

    private mutating func dropUnusedNodes() {
        var used = [Bool](repeating: false, count: nodes.count)
        for index in slots where index != RedisSlotTable.unassigned { used[Int(index)] = true }
        guard used.contains(false) else { return }
        var remap = [UInt16](repeating: RedisSlotTable.unassigned, count: nodes.count)
        var kept: [Node] = []
        for (old, node) in nodes.enumerated() where used[old] {
            remap[old] = UInt16(kept.count)
            kept.append(node)
        }
        nodes = kept
        for slot in slots.indices where slots[slot] != RedisSlotTable.unassigned { slots[slot] = remap[Int(slots[slot])] }
    }
}
