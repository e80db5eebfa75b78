import GatewayRedis
import GatewayStore

/// The revocation of one batch of keys (`keys revoke` by `--app`/`--environment`, one page at a time,
/// or by `--account`): every key's own outcome, a failed one included, so that the keys a batch did
/// revoke are printed before a store failure is reported (a re-run selects active keys only, so a
/// key revoked and never printed would never be listed by the command again).
struct KeysRevocationBatch {
    /// One result per record, in order: `would_revoke` (dry run), `revoked`, `already_revoked`,
    /// `not_found` or `failed`.
    private(set) var results: [String]
    /// The store's error for each `failed` record (nil for the others).
    private(set) var errors: [String?]
    /// How many records this batch revoked.
    private(set) var revoked = 0
    /// The first store failure (a revocation, or taking revoked keys out of their account's index);
    /// the caller prints the batch, then throws it (exit 3).
    private(set) var failure: KeysCommandError?

    /// Revokes `records` (all at once, pipelined) unless `dryRun`, then hands the records whose
    /// revocation was answered (`revoked`, `already_revoked`) to `leave`, which takes them out of
    /// their account's index; its error becomes `failure` when nothing failed before.
    init(_ records: [KeyRecord], dryRun: Bool, store: RedisStore, reason: String?, revokedBy: String?, now: Int64,
         leave: ([KeyRecord]) throws -> Void) {
        results = [String](repeating: "would_revoke", count: records.count)
        errors = [String?](repeating: nil, count: records.count)
        guard !dryRun else { return }
        let outcomes = KeysCommand.waitEach(records) { record, done in
            store.revokeKey(record.keyId, reason: reason, revokedBy: revokedBy, now: now, completion: done)
        }
        var answered: [KeyRecord] = []
        for (i, outcome) in outcomes.enumerated() {
            switch outcome {
            case .success(.revoked):
                results[i] = "revoked"
                revoked += 1
                answered.append(records[i])
            case .success(.alreadyRevoked):
                results[i] = "already_revoked"
                answered.append(records[i])
            case .success(.notFound):
                results[i] = "not_found"
            case .failure(let error):
                results[i] = "failed"
                errors[i] = error.description
                if failure == nil { failure = error }
            }
        }
        do {
            try leave(answered)
        } catch let error as KeysCommandError {
            if failure == nil { failure = error }
        } catch {
            if failure == nil { failure = KeysCommandError(.storeUnavailable, "\(error)") }
        }
    }

    /// The JSON line of record `index`: `fields`, then `result` (and `error` when it failed).
    func line(_ index: Int, _ fields: [(String, JSONText)]) -> String {
        var all = fields
        all.append(("result", .string(results[index])))
        if let error = errors[index] { all.append(("error", .string(error))) }
        return JSONText.object(all).rendered
    }
}
