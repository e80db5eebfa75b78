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
    /// A position in the walk: a SCAN cursor and how many keys of its batch were already seen.
    struct Cursor: Equatable {
        var scan: String
        var skip: Int

        static let start = Cursor(scan: "0", skip: 0)

        /// `SCAN` or `SCAN:SKIP`.
        var text: String { skip == 0 ? scan : "\(scan):\(skip)" }

        init(scan: String, skip: Int) {
            self.scan = scan
            self.skip = skip
        }

        init?(_ text: String) {
            let parts = text.split(separator: ":", omittingEmptySubsequences: false)
            guard (1...2).contains(parts.count), let scanValue = UInt64(parts[0]) else { return nil }
            scan = String(scanValue)
            skip = 0
            if parts.count == 2 {
                guard let s = Int(parts[1]), s > 0 else { return nil }
                skip = s
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
        var skip = start.skip
        var seen = Set<KeyID>()
        while true {
            let step = try KeysCommand.wait { store.scanKeyRecords(cursor: scan, count: count, completion: $0) }
            let keyIds = step.keyIds.map { Base64.decode($0).flatMap { try? KeyID($0) } }
            var positions: [(index: Int, keyId: KeyID)] = []
            for (index, keyId) in keyIds.enumerated() where index >= skip {
                guard let keyId, seen.insert(keyId).inserted else { continue }
                positions.append((index, keyId))
            }
            let records = try KeysCommand.waitAll(positions) { position, done in store.fetchKey(position.keyId, completion: done) }
            var items: [Item] = []
            for (position, record) in zip(positions, records) {
                guard let record else { continue }  // deleted meanwhile
                let after: Cursor? = position.index + 1 < keyIds.count ? Cursor(scan: scan, skip: position.index + 1)
                    : (step.cursor == "0" ? nil : Cursor(scan: step.cursor, skip: 0))
                items.append(Item(record: record, after: after))
            }
            if let stop = try batch(items) { return stop }
            if step.cursor == "0" { return nil }
            scan = step.cursor
            skip = 0
        }
    }
}
