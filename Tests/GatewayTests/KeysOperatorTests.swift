import Foundation
import GatewayTestSupport
import XCTest

/// `attestctl keys list` and revocation (single and bulk, with reason and operator) against a real
/// redis-server seeded with key records in the gateway's layout (`aa:{<keyId>}:key`), its exit codes
/// (0 ok, 1 nothing matched, 2 usage, 3 store unavailable) and its Redis login (never from argv).
final class KeysOperatorTests: XCTestCase {
    private var redis: RedisServer!
    /// keyId (standard base64) -> (app, environment, createdAt).
    private var seeded: [String: (app: String, environment: String, created: Int64)] = [:]
    static let appA = "ABCDE12345.com.example.a"
    static let appB = "ABCDE12345.com.example.b"

    override func setUpWithError() throws {
        redis = try RedisServer()
        // 20 keys of app A (12 production, 8 development), 10 of app B (production); createdAt 1000+i.
        var commands = ""
        for i in 0..<30 {
            var bytes = [UInt8](repeating: 0, count: 32)
            bytes[0] = UInt8(i)
            bytes[31] = 0xA5
            let keyId = Data(bytes).base64EncodedString()
            let url = keyId.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            let app = i < 20 ? Self.appA : Self.appB
            let environment = i < 12 || i >= 20 ? "production" : "development"
            let created = Int64(1000 + i)
            seeded[keyId] = (app, environment, created)
            commands += "HSET \"aa:{\(url)}:key\" v 1 pk \"\\x04\(String(repeating: "A", count: 64))\" ctr 0 env \(environment) app \(app) created \(created) status active tier app_attest\n"
        }
        let result = try ChildProcess.run("redis-cli", ["-p", String(redis.port)], stdin: Data(commands.utf8))
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(try redis.cli("DBSIZE"), "30")
    }

    override func tearDown() {
        redis?.stop()
        super.tearDown()
    }

    private func attestctl(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, stdout: String, stderr: String) {
        let binary = try BuiltProducts.executable("attestctl")
        let errFile = FileManager.default.temporaryDirectory.appendingPathComponent("attestctl-err-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: errFile) }
        // stdout and stderr apart: the shell is the simplest way with ChildProcess.run.
        let quoted = ([binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let result = try ChildProcess.run("/bin/sh", ["-c", "\(quoted) 2>'\(errFile.path)'"], environment: environment)
        let stderr = (try? String(contentsOf: errFile, encoding: .utf8)) ?? ""
        return (result.status, result.output, stderr)
    }

    private var store: [String] { ["--store", redis.url] }

    private func objects(_ text: String) -> [[String: Any]] {
        text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
    }

    private func keyIds(_ text: String) -> Set<String> { Set(objects(text).compactMap { $0["keyId"] as? String }) }

    // MARK: list

    func testListFiltersByAppEnvironmentStatusAndCreationTime() throws {
        let all = try attestctl(["keys", "list"] + store)
        XCTAssertEqual(all.status, 0, all.stderr)
        XCTAssertEqual(all.stdout.split(separator: "\n").count, 30, "one line per record")
        XCTAssertEqual(keyIds(all.stdout), Set(seeded.keys))
        let first = try XCTUnwrap(objects(all.stdout).first)
        for field in ["keyId", "appId", "environment", "counter", "status", "trustTier", "createdAt", "revokedAt", "revokedReason", "revokedBy"] {
            XCTAssertTrue(first.keys.contains(field), "\(field) in \(first)")
        }
        XCTAssertFalse(all.stderr.contains("next_cursor"), "one page: \(all.stderr)")

        let b = try attestctl(["keys", "list", "--app", Self.appB] + store)
        XCTAssertEqual(keyIds(b.stdout), Set(seeded.filter { $0.value.app == Self.appB }.keys))
        let aDev = try attestctl(["keys", "list", "--app", Self.appA, "--environment", "development"] + store)
        XCTAssertEqual(keyIds(aDev.stdout), Set(seeded.filter { $0.value.app == Self.appA && $0.value.environment == "development" }.keys))
        XCTAssertEqual(keyIds(aDev.stdout).count, 8)
        let window = try attestctl(["keys", "list", "--created-after", "1005", "--created-before", "1010"] + store)
        XCTAssertEqual(keyIds(window.stdout), Set(seeded.filter { (1005..<1010).contains($0.value.created) }.keys))
        let iso = try attestctl(["keys", "list", "--created-before", "1970-01-01T00:00:01.003Z"] + store)
        XCTAssertEqual(keyIds(iso.stdout).count, 3, iso.stderr)

        let none = try attestctl(["keys", "list", "--status", "revoked"] + store)
        XCTAssertEqual(none.status, 1, "nothing matched: \(none.stderr)")
        XCTAssertEqual(none.stdout, "")
        XCTAssertEqual(try attestctl(["keys", "list", "--environment", "staging"] + store).status, 2)
        XCTAssertEqual(try attestctl(["keys", "list", "--created-after", "yesterday"] + store).status, 2)
    }

    func testListPagesWithLimitAndCursor() throws {
        var cursor: String?
        var pages = 0
        var listed: [String] = []
        repeat {
            let page = try attestctl(["keys", "list", "--limit", "7"] + store + (cursor.map { ["--cursor", $0] } ?? []))
            XCTAssertEqual(page.status, 0, page.stderr)
            let lines = objects(page.stdout)
            XCTAssertLessThanOrEqual(lines.count, 7)
            listed += lines.compactMap { $0["keyId"] as? String }
            cursor = objects(page.stderr).compactMap { $0["next_cursor"] as? String }.first
            if cursor != nil { XCTAssertEqual(lines.count, 7, "a page that is not the last is full") }
            pages += 1
        } while cursor != nil && pages < 20
        XCTAssertNil(cursor, "the walk ends")
        XCTAssertGreaterThanOrEqual(pages, 5)
        XCTAssertEqual(Set(listed), Set(seeded.keys), "every record on some page")
        XCTAssertEqual(try attestctl(["keys", "list", "--cursor", "nonsense"] + store).status, 2)
        // Probe: cursors of another form reached Redis and came back "store unavailable" (exit 3).
        for foreign in ["abc", "1.0.ffff", "12:AAAA"] {
            let refused = try attestctl(["keys", "list", "--cursor", foreign] + store)
            XCTAssertEqual(refused.status, 2, "\(foreign): \(refused.stderr)")
        }
        XCTAssertEqual(try attestctl(["keys", "list", "--limit", "0"] + store).status, 2)
    }

    /// Probe: a page resumed by skipping a count of its SCAN batch, so records deleted between two
    /// pages shifted as many unseen ones into the skipped part (100 deleted, 100 never listed). A page
    /// now resumes after the last keyId it listed, by value.
    func testAPageResumesAfterItsLastKeySoDeletionsBetweenPagesSkipNothing() throws {
        let first = try attestctl(["keys", "list", "--limit", "10"] + store)
        XCTAssertEqual(first.status, 0, first.stderr)
        let listed = objects(first.stdout).compactMap { $0["keyId"] as? String }
        XCTAssertEqual(listed.count, 10)
        let cursor = try XCTUnwrap(objects(first.stderr).compactMap { $0["next_cursor"] as? String }.first, first.stderr)
        func url(_ keyId: String) -> String {
            keyId.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        // Half of the listed records go (expired, deleted, forgotten), and two not listed yet.
        let unlisted = Set(seeded.keys).subtracting(listed).sorted()
        for keyId in Array(listed.prefix(5)) + Array(unlisted.prefix(2)) {
            XCTAssertEqual(try redis.cli("DEL", "aa:{\(url(keyId))}:key"), "1")
        }
        var rest: [String] = []
        var next: String? = cursor
        var pages = 0
        while let at = next, pages < 20 {
            let page = try attestctl(["keys", "list", "--limit", "10", "--cursor", at] + store)
            XCTAssertEqual(page.status, 0, page.stderr)
            rest += objects(page.stdout).compactMap { $0["keyId"] as? String }
            next = objects(page.stderr).compactMap { $0["next_cursor"] as? String }.first
            pages += 1
        }
        XCTAssertEqual(Set(unlisted.dropFirst(2)).subtracting(rest), [], "every record present during the whole walk is listed")
    }

    /// A store failure in the walk itself (SCAN refused to an ACL user) still writes the summary,
    /// then exits 3 (before, the error left before the summary).
    func testAWalkFailureStillWritesTheSummary() throws {
        let acl = try ChildProcess.run("redis-cli", ["-p", String(redis.port), "ACL", "SETUSER", "noscan", "on", ">noscan-pw", "+@all", "-scan", "~*"])
        XCTAssertEqual(acl.output.trimmingCharacters(in: .whitespacesAndNewlines), "OK", acl.output)
        let run = try attestctl(["keys", "revoke", "--app", Self.appB, "--reason", "r", "--yes", "--username", "noscan"] + store,
                                environment: ["ATTESTCTL_REDIS_PASSWORD": "noscan-pw"])
        XCTAssertEqual(run.status, 3, run.stderr)
        XCTAssertEqual(objects(run.stderr).first?["matched"] as? Int, 0, run.stderr)
        XCTAssertTrue(run.stderr.contains("NOPERM"), run.stderr)
    }

    /// Probe: `redis://` naming one node of a Redis Cluster walked that node's keys only (a third), and
    /// a bulk revocation reported success. Refused with the URL to use; `redis+cluster://` works.
    func testARedisURLNamingAClusterNodeIsRefused() throws {
        let cluster = try SharedRedisCluster.cluster()
        let node = try cluster.liveNode()
        let wrong = try attestctl(["keys", "list", "--store", "redis://127.0.0.1:\(node)/0"])
        XCTAssertEqual(wrong.status, 2, wrong.stderr)
        XCTAssertTrue(wrong.stderr.contains("Redis Cluster node") && wrong.stderr.contains("redis+cluster://"), wrong.stderr)
        let revoke = try attestctl(["keys", "revoke", "--app", Self.appA, "--reason", "r", "--yes", "--store", "redis://127.0.0.1:\(node)/0"])
        XCTAssertEqual(revoke.status, 2, revoke.stderr)
        let right = try attestctl(["keys", "list", "--app", "ABCDE12345.com.example.nothing", "--store", cluster.url(seed: node)])
        XCTAssertEqual(right.status, 1, "a cluster URL walks every primary (nothing of this app): \(right.stderr)")
        // The other way round: a cluster URL naming a standalone Redis says why there is no map.
        let standalone = try attestctl(["keys", "list", "--store", "redis+cluster://127.0.0.1:\(redis.port)"])
        XCTAssertEqual(standalone.status, 3, standalone.stderr)
        XCTAssertTrue(standalone.stderr.contains("cluster support disabled"), standalone.stderr)
        // A cursor of the old cluster form (position x 2^48) or a standalone one: usage errors.
        for foreign in ["281474976710656", "5", "99999.0.ab"] {
            let refused = try attestctl(["keys", "list", "--cursor", foreign, "--store", cluster.url(seed: node)])
            XCTAssertEqual(refused.status, 2, "\(foreign): \(refused.stderr)")
        }
    }

    // MARK: revoke

    func testSingleRevocationRecordsReasonOperatorAndTimeAndKeepsTheFirst() throws {
        let keyId = try XCTUnwrap(seeded.first { $0.value.app == Self.appA }?.key)
        let before = Int64(Date().timeIntervalSince1970 * 1000)
        let revoked = try attestctl(["keys", "revoke", "--key-id", keyId, "--reason", "lost device #42", "--operator", "alice"] + store)
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        XCTAssertEqual(objectsPretty(revoked.stdout)["result"] as? String, "revoked")
        let shown = objectsPretty(try attestctl(["keys", "show", "--key-id", keyId] + store).stdout)
        XCTAssertEqual(shown["status"] as? String, "revoked")
        XCTAssertEqual(shown["revokedReason"] as? String, "lost device #42")
        XCTAssertEqual(shown["revokedBy"] as? String, "alice")
        XCTAssertGreaterThanOrEqual((shown["revokedAt"] as? NSNumber)?.int64Value ?? 0, before)
        XCTAssertEqual(try redis.cli("HGET", "aa:{\(base64URL(keyId))}:key", "revoked_by"), "alice", "stored in the key record")

        // Again, with other words: the first revocation stays.
        let again = try attestctl(["keys", "revoke", "--key-id", keyId, "--reason", "other"] + store, environment: ["ATTESTCTL_OPERATOR": "bob"])
        XCTAssertEqual(again.status, 0, again.stderr)
        XCTAssertEqual(objectsPretty(again.stdout)["result"] as? String, "already_revoked")
        XCTAssertEqual(objectsPretty(try attestctl(["keys", "show", "--key-id", keyId] + store).stdout)["revokedBy"] as? String, "alice")

        // The operator from the environment when --operator is absent.
        let other = try XCTUnwrap(seeded.first { $0.value.app == Self.appB }?.key)
        XCTAssertEqual(try attestctl(["keys", "revoke", "--key-id", other] + store, environment: ["ATTESTCTL_OPERATOR": "bob"]).status, 0)
        let otherShown = objectsPretty(try attestctl(["keys", "show", "--key-id", other] + store).stdout)
        XCTAssertEqual(otherShown["revokedBy"] as? String, "bob")
        XCTAssertTrue(otherShown["revokedReason"] is NSNull, "no reason given: null")

        // A record revoked the old way (status only) still reads, without audit fields.
        let old = try XCTUnwrap(seeded.first { $0.key != keyId && $0.key != other }?.key)
        XCTAssertEqual(try redis.cli("HSET", "aa:{\(base64URL(old))}:key", "status", "revoked"), "0")
        let oldShown = objectsPretty(try attestctl(["keys", "show", "--key-id", old] + store).stdout)
        XCTAssertEqual(oldShown["status"] as? String, "revoked")
        XCTAssertTrue(oldShown["revokedAt"] is NSNull)

        let unknown = try attestctl(["keys", "revoke", "--key-id", String(repeating: "A", count: 43) + "="] + store)
        XCTAssertEqual(unknown.status, 1, unknown.stderr)
        XCTAssertTrue(unknown.stderr.contains("no key record"), unknown.stderr)
    }

    func testBulkRevocationNeedsConfirmationHasADryRunAndRecordsTheReason() throws {
        let bKeys = Set(seeded.filter { $0.value.app == Self.appB }.keys)
        let unconfirmed = try attestctl(["keys", "revoke", "--app", Self.appB, "--reason", "app retired"] + store)
        XCTAssertEqual(unconfirmed.status, 2)
        XCTAssertTrue(unconfirmed.stderr.contains("--yes") && unconfirmed.stderr.contains("--dry-run"), unconfirmed.stderr)
        XCTAssertEqual(try attestctl(["keys", "revoke", "--app", Self.appB, "--yes"] + store).status, 2, "a reason is required")
        XCTAssertEqual(try attestctl(["keys", "revoke", "--reason", "x", "--yes"] + store).status, 2, "no selection")

        let dry = try attestctl(["keys", "revoke", "--app", Self.appB, "--reason", "app retired", "--dry-run"] + store)
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertEqual(keyIds(dry.stdout), bKeys)
        XCTAssertTrue(objects(dry.stdout).allSatisfy { $0["result"] as? String == "would_revoke" })
        XCTAssertEqual(try attestctl(["keys", "list", "--status", "revoked"] + store).status, 1, "a dry run changes nothing")

        let done = try attestctl(["keys", "revoke", "--app", Self.appB, "--reason", "app retired", "--operator", "carol", "--yes"] + store)
        XCTAssertEqual(done.status, 0, done.stderr)
        XCTAssertEqual(keyIds(done.stdout), bKeys)
        XCTAssertTrue(objects(done.stdout).allSatisfy { $0["result"] as? String == "revoked" }, done.stdout)
        XCTAssertEqual(objects(done.stderr).first?["revoked"] as? Int, 10, done.stderr)
        let revoked = try attestctl(["keys", "list", "--status", "revoked"] + store)
        XCTAssertEqual(keyIds(revoked.stdout), bKeys, "exactly app B's keys")
        for record in objects(revoked.stdout) {
            XCTAssertEqual(record["revokedReason"] as? String, "app retired")
            XCTAssertEqual(record["revokedBy"] as? String, "carol")
        }
        XCTAssertEqual(keyIds(try attestctl(["keys", "list", "--status", "active"] + store).stdout).count, 20, "app A untouched")

        let nothing = try attestctl(["keys", "revoke", "--app", Self.appB, "--reason", "again", "--yes"] + store)
        XCTAssertEqual(nothing.status, 1, "no active key left: \(nothing.stderr)")

        // By environment, narrowed by creation time.
        let dev = try attestctl(["keys", "revoke", "--environment", "development", "--created-before", "1015", "--reason", "r", "--yes"] + store)
        XCTAssertEqual(dev.status, 0, dev.stderr)
        XCTAssertEqual(keyIds(dev.stdout), Set(seeded.filter { $0.value.environment == "development" && $0.value.created < 1015 }.keys))
    }

    /// A store that refuses some revocations mid-page (a Redis ACL user that may write only three of
    /// app B's keys): every key of the page is still printed, the three as `revoked` and the others
    /// as `failed` with the store's error, the summary counts the three, and the exit is 3. Before,
    /// the page's output was lost, and a re-run never listed the keys it had revoked.
    func testBulkRevocationPrintsWhatItRevokedBeforeAStoreFailure() throws {
        let bKeys = seeded.filter { $0.value.app == Self.appB }.map(\.key).sorted()
        let writable = Array(bKeys.prefix(3))
        func url(_ keyId: String) -> String {
            keyId.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let acl = try ChildProcess.run("redis-cli", ["-p", String(redis.port), "ACL", "SETUSER", "halfway", "on", ">halfway-pw", "+@all", "%R~*"]
                                                    + writable.map { "~aa:{\(url($0))}:*" })
        XCTAssertEqual(acl.output.trimmingCharacters(in: .whitespacesAndNewlines), "OK", acl.output)
        let login = ["ATTESTCTL_REDIS_PASSWORD": "halfway-pw"]
        let partial = try attestctl(["keys", "revoke", "--app", Self.appB, "--reason", "breach", "--yes", "--username", "halfway"] + store,
                                    environment: login)
        XCTAssertEqual(partial.status, 3, "a store failure: \(partial.stderr)")
        let lines = objects(partial.stdout)
        XCTAssertEqual(Set(lines.compactMap { $0["keyId"] as? String }), Set(bKeys), "every key of the page printed: \(partial.stdout)")
        XCTAssertEqual(Set(lines.filter { $0["result"] as? String == "revoked" }.compactMap { $0["keyId"] as? String }), Set(writable),
                       partial.stdout)
        let failed = lines.filter { $0["result"] as? String == "failed" }
        XCTAssertEqual(failed.count, bKeys.count - writable.count, partial.stdout)
        XCTAssertTrue(failed.allSatisfy { ($0["error"] as? String)?.contains("NOPERM") ?? false }, partial.stdout)
        XCTAssertEqual(objects(partial.stderr).first?["revoked"] as? Int, writable.count, partial.stderr)
        XCTAssertEqual(keyIds(try attestctl(["keys", "list", "--status", "revoked"] + store).stdout), Set(writable),
                       "what the output says is what the store holds")
    }

    /// `--wait-replicas N`, as the gateway's `store.wait_replicas`: a revocation is reported done only
    /// once N replicas acknowledged it. This Redis has no replica: the revocation is made (the key
    /// is refused from then on) but not confirmed durable, so the command fails (exit 3, `WAIT`);
    /// without the option it succeeds. Before, attestctl never waited, whatever the fleet's setting.
    func testWaitReplicasMakesARevocationWaitForReplicas() throws {
        let keys = seeded.filter { $0.value.app == Self.appA }.map(\.key).sorted()
        let unconfirmed = try attestctl(["keys", "revoke", "--key-id", keys[0], "--reason", "r", "--wait-replicas", "1"] + store)
        XCTAssertEqual(unconfirmed.status, 3, unconfirmed.stderr)
        XCTAssertTrue(unconfirmed.stderr.contains("WAIT"), unconfirmed.stderr)
        let shown = try attestctl(["keys", "show", "--key-id", keys[0]] + store)
        XCTAssertTrue(shown.stdout.contains("\"revoked\""), "the write happened: \(shown.stdout)")
        let plain = try attestctl(["keys", "revoke", "--key-id", keys[1], "--reason", "r"] + store)
        XCTAssertEqual(plain.status, 0, plain.stderr)
        XCTAssertEqual(try attestctl(["keys", "revoke", "--key-id", keys[2], "--reason", "r", "--wait-replicas", "17"] + store).status, 2)
    }

    /// Probe (read in the code): `keys revoke --key-id` read the record again after revoking it (to
    /// leave its account's index) and printed nothing when that read failed, although the key was
    /// revoked. The result is now printed first; the failure follows (exit 3, saying what is done).
    func testASingleRevocationIsReportedEvenWhenTheFollowUpFails() throws {
        let acl = try ChildProcess.run("redis-cli", ["-p", String(redis.port), "ACL", "SETUSER", "noread", "on", ">noread-pw", "+@all", "-hmget", "~*"])
        XCTAssertEqual(acl.output.trimmingCharacters(in: .whitespacesAndNewlines), "OK", acl.output)
        let keyId = try XCTUnwrap(seeded.keys.sorted().first)
        let run = try attestctl(["keys", "revoke", "--key-id", keyId, "--reason", "r", "--username", "noread"] + store,
                                environment: ["ATTESTCTL_REDIS_PASSWORD": "noread-pw"])
        XCTAssertEqual(run.status, 3, run.stderr)
        XCTAssertTrue(run.stdout.contains("\"revoked\""), "reported: \(run.stdout)")
        XCTAssertTrue(run.stderr.contains("the key is revoked"), run.stderr)
        XCTAssertTrue(try attestctl(["keys", "show", "--key-id", keyId] + store).stdout.contains("\"revoked\""))
    }

    // MARK: exit codes and login

    func testStoreUnavailableExitsThree() throws {
        let dead = try ReservedPort()  // nothing answers there
        defer { withExtendedLifetime(dead) {} }
        let down = try attestctl(["keys", "list", "--store", "redis://127.0.0.1:\(dead.port)/0"])
        XCTAssertEqual(down.status, 3, down.stderr)
        XCTAssertTrue(down.stderr.contains("store_unavailable"), down.stderr)
        XCTAssertEqual(try attestctl(["keys", "frobnicate"] + store).status, 2)
        XCTAssertEqual(try attestctl(["keys", "list", "--bogus"] + store).status, 2)
        XCTAssertEqual(try attestctl(["keys", "--help"]).status, 0)
    }

    func testPasswordNeverFromArgv() throws {
        let password = "pw-\(UUID().uuidString)"
        XCTAssertEqual(try redis.cli("CONFIG", "SET", "requirepass", password), "OK")
        let inURL = try attestctl(["keys", "list", "--store", "redis://:\(password)@127.0.0.1:\(redis.port)/0"])
        XCTAssertEqual(inURL.status, 2)
        XCTAssertTrue(inURL.stderr.contains("ATTESTCTL_REDIS_PASSWORD"), inURL.stderr)
        XCTAssertFalse(inURL.stderr.contains(password), inURL.stderr)
        let option = try attestctl(["keys", "list", "--password", password] + store)
        XCTAssertEqual(option.status, 2)
        XCTAssertTrue(option.stderr.contains("--password-file"), option.stderr)

        XCTAssertEqual(try attestctl(["keys", "list"] + store).status, 3, "no password: refused by Redis")
        XCTAssertEqual(try attestctl(["keys", "list"] + store, environment: ["ATTESTCTL_REDIS_PASSWORD": password]).status, 0)
        XCTAssertEqual(try attestctl(["keys", "list"] + store, environment: ["REDISCLI_AUTH": password]).status, 0)
        let file = redis.directory.appendingPathComponent("attestctl.pw")
        try (password + "\n").write(to: file, atomically: true, encoding: .utf8)
        XCTAssertEqual(try attestctl(["keys", "list", "--password-file", file.path] + store).status, 0)
        XCTAssertEqual(try attestctl(["keys", "list", "--password-file", file.path + ".absent"] + store).status, 2)
        let wrong = try attestctl(["keys", "list"] + store, environment: ["ATTESTCTL_REDIS_PASSWORD": "wrong-\(password)"])
        XCTAssertEqual(wrong.status, 3, wrong.stderr)
        XCTAssertFalse(wrong.stderr.contains(password), wrong.stderr)
        try? redis.cli("-a", password, "CONFIG", "SET", "requirepass", "")
    }

    private func objectsPretty(_ text: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] ?? [:]
    }
}
