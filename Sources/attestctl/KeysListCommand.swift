import AppAttest
import Foundation
import GatewayRedis
import GatewayStore

/// `attestctl keys list [FILTERS] [--limit N] [--cursor C] STORE`: the key records matching
/// `KeyFilter`, one compact JSON object per line (`KeysCommand.describe`), at most `--limit` (default
/// 100, 1...100000), walking Redis with SCAN. When the walk stopped at the limit before the end, the
/// last line on standard error is `{"next_cursor":"C"}`: pass `--cursor C` for the next page (the
/// cursor is opaque; like Redis SCAN, a record present during the whole walk is listed at least once
/// and may come twice across pages). Exit 1 when no record matched at all.
enum KeysListCommand {
    /// A position in the walk: the store's SCAN cursor and, when a page ended inside that cursor's
    /// batch, the last keyId listed from it. A batch is taken in keyId order, and a resumed batch
    /// skips the keyIds up to that one by value, not by position: records deleted between two pages
    /// no longer shift unseen ones into the skipped part (a probe lost as many as were deleted).
    struct Cursor: Equatable {
        var scan: String
        /// The last keyId (unpadded base64url) listed from `scan`'s batch; nil: none yet.
        var after: String?

        static let start = Cursor(scan: "0", after: nil)

        /// `SCAN` or `SCAN:KEYID`.
        var text: String { after.map { "\(scan):\($0)" } ?? scan }

        init(scan: String, after: String?) {
            self.scan = scan
            self.after = after
        }

        /// Whether the SCAN part has the form the store prints: a decimal for one Redis, `0` or
        /// `<slot>.<decimal>.<hex tag>` for a Redis Cluster (an older or foreign cursor is a usage
        /// error, exit 2, not a store failure).
        func fits(cluster: Bool) -> Bool { RedisStore.isKeyWalkCursor(scan, cluster: cluster) }

        /// Reads a printed cursor; nil when it is not one (the store checks the SCAN part's form).
        init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), !parts[0].isEmpty, parts[0].count <= 64,
                  parts[0].allSatisfy({ $0.isHexDigit || $0 == "." }) else { return nil }
            scan = String(parts[0])
            after = nil
            if parts.count == 2 {
                guard let key = Base64.decode(String(parts[1])), (try? KeyID(key)) != nil else { return nil }
                after = String(parts[1])
            }
        }
    }

    static func run(_ arguments: [String]) throws {
        let options = try DeviceCommandOptions(arguments, valued: RedisLogin.options.union(KeyFilter.options).union(["limit", "cursor"])
                                                                .union(KeysAccountCommand.options))
        let filter = try KeyFilter(options)
        if let account = try KeysAccountCommand.account(options) { return try KeysAccountCommand.list(account, filter: filter, options: options) }
        let limit = try options.integer("limit", default: 100, in: 1...100_000) ?? 100
        var start = Cursor.start
        if let text = try options.value("cursor") {
            guard let cursor = Cursor(text) else { throw DeviceCommandError.usage("--cursor must be a cursor printed by a previous keys list") }
            start = cursor
        }
        let store = try KeysCommand.connect(options)
        defer { store.close() }
        guard start.fits(cluster: store.isCluster) else {
            throw DeviceCommandError.usage("--cursor must be a cursor printed by a previous keys list against this store (this version)")
        }
        var listed = 0
        let next = try walk(store, from: start) { records in
            let chosen = records.filter { filter.matches($0.record) }.prefix(limit - listed)
            let revocations = try KeysCommand.waitAll(Array(chosen)) { item, done in store.fetchRevocation(item.record.keyId, completion: done) }
            for (item, revocation) in zip(chosen, revocations) {
                print(KeysCommand.describe(item.record, revocation).rendered)
            }
            listed += chosen.count
            if listed < limit { return Cursor??.none }
            return Cursor??.some(chosen.last?.after)
        }
        if let next {
            FileHandle.standardError.write(Data("{\"next_cursor\":\"\(next.text)\"}\n".utf8))
        } else if listed == 0 && start == .start {
            throw KeysCommandError(.nothingMatched, "no key record matched")
        }
    }

    /// One record of a batch and the cursor that resumes right after it (nil: it was the last).
    struct Item {
        let record: KeyRecord
        let after: Cursor?
    }

    /// Walks the key records from `start`, one SCAN batch at a time (records fetched concurrently);
    /// `batch` returns the cursor to stop at, or nil to go on.
    /// - Returns: where the walk stopped (nil: at the end).
    static func walk(_ store: RedisStore, from start: Cursor, count: Int = 500,
                     _ batch: ([Item]) throws -> Cursor??) throws -> Cursor? {
        var scan = start.scan
        var after = start.after
        var seen = Set<KeyID>()
        while true {
            let step = try KeysCommand.wait { store.scanKeyRecords(cursor: scan, count: count, completion: $0) }
            // In keyId order, from just after the last one listed (by value).
            let names = Set(step.keyIds).sorted().filter { name in after.map { name > $0 } ?? true }
            var positions: [(name: String, keyId: KeyID)] = []
            for name in names {
                guard let keyId = Base64.decode(name).flatMap({ try? KeyID($0) }), seen.insert(keyId).inserted else { continue }
                positions.append((name, keyId))
            }
            let records = try KeysCommand.waitAll(positions) { position, done in store.fetchKey(position.keyId, completion: done) }
            var items: [Item] = []
            for (offset, (position, record)) in zip(positions, records).enumerated() {
                guard let record else { continue }  // deleted meanwhile
                let last = offset + 1 == positions.count
                let resume: Cursor? = !last ? Cursor(scan: scan, after: position.name)
                    : (step.cursor == "0" ? nil : Cursor(scan: step.cursor, after: nil))
                items.append(Item(record: record, after: resume))
            }
            if let stop = try batch(items) { return stop }
            if step.cursor == "0" { return nil }
            scan = step.cursor
            after = nil
        }
    }
}
