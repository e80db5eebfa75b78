import Foundation
import GatewayTestSupport
import XCTest

/// Issue 10 "Keys per account" end to end over real sockets against a real redis-server: the app
/// names `X-Account`, keeps HMAC-SHA256(account key, App ID || 0x00 || value) with each key (checked
/// against `openssl dgst -hmac`; the value itself is never stored), allows 2 live keys per account and
/// revokes the oldest when a third registers; `attestctl keys list|revoke --account --app` find the
/// same keys. Two apps with the same account key keep separate accounts.
final class KeysPerAccountTests: XCTestCase {
    private var env: LifecycleGateway!

    override func setUpWithError() throws {
        guard E2EPaths.hasRefDevice else { throw XCTSkip(SharedFixtures.absentMessage) }
        env = try LifecycleGateway()
    }

    override func tearDown() {
        env?.stop()
        env = nil
        super.tearDown()
    }

    /// HMAC-SHA256 by openssl of the App ID, one 0x00 byte and the account value (the account of
    /// `value` in that app), as unpadded base64url (the form `AccountHash.description` prints).
    private func opensslHMAC(_ value: String, key: String = LifecycleGateway.accountKey,
                             appId: String = LifecycleGateway.appId) throws -> String {
        let file = env.work.appendingPathComponent("hmac-\(UUID().uuidString.prefix(8))")
        let input = env.work.appendingPathComponent("value-\(UUID().uuidString.prefix(8))")
        XCTAssertTrue(FileManager.default.createFile(atPath: input.path, contents: Data(appId.utf8) + Data([0]) + Data(value.utf8)))
        let result = try ChildProcess.run("openssl", ["dgst", "-sha256", "-hmac", key, "-binary", "-out", file.path, input.path])
        XCTAssertEqual(result.status, 0, result.output)
        let bytes = try XCTUnwrap(FileManager.default.contents(atPath: file.path))
        return base64URL(bytes.base64EncodedString())
    }

    private func attestctl(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, stdout: String, stderr: String) {
        let binary = try BuiltProducts.executable("attestctl")
        let errFile = env.work.appendingPathComponent("attestctl-err-\(UUID().uuidString)")
        let quoted = ([binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }.joined(separator: " ")
        let result = try ChildProcess.run("/bin/sh", ["-c", "\(quoted) 2>'\(errFile.path)'"], environment: environment)
        return (result.status, result.output, (try? String(contentsOf: errFile, encoding: .utf8)) ?? "")
    }

    private func keyIds(_ text: String) -> Set<String> {
        Set(text.split(separator: "\n").compactMap { (try? JSONSerialization.jsonObject(with: Data($0.utf8))) as? [String: Any] }
            .compactMap { $0["keyId"] as? String })
    }

    /// `403 key_revoked` for a protected request of `device`: at the challenge when this gateway
    /// revoked the key itself (it asks the store), else at the commit.
    private func expectRevoked(_ device: RefDevice, counter: UInt32, appId: String = LifecycleGateway.appId, _ message: String,
                               file: StaticString = #filePath, line: UInt = #line) throws {
        let challenge = try env.requestChallenge(keyId: device.keyId, purpose: "assert")
        if challenge.status != 201 {
            XCTAssertEqual(challenge.status, 403, "\(message): \(challenge)", file: file, line: line)
            XCTAssertEqual(challenge.errorCode, "key_revoked", message, file: file, line: line)
            return
        }
        let reply = try env.send(try env.signedRequest(device, target: "/v1/protected/item", body: Array("{}".utf8), counter: counter,
                                                       challenge: challenge.json["challenge"] as? String, appId: appId))
        XCTAssertEqual(reply.status, 403, "\(message): \(reply)", file: file, line: line)
        XCTAssertEqual(reply.errorCode, "key_revoked", message, file: file, line: line)
    }

    func testThirdKeyOfAnAccountRevokesTheOldest() throws {
        let first = try env.attestedRefDevice(account: "alice")
        let second = try env.attestedRefDevice(account: "alice")
        let bob = try env.attestedRefDevice(account: "bob")
        let anonymous = try env.attestedRefDevice()

        // The keyed hash, not the value, is stored with the key.
        XCTAssertEqual(try env.record(first.keyId)?.accountHash?.description, try opensslHMAC("alice"))
        XCTAssertNotEqual(try opensslHMAC("alice"), try opensslHMAC("alice", key: "another-account-key-0123456789"))
        XCTAssertEqual(try env.record(bob.keyId)?.accountHash?.description, try opensslHMAC("bob"))
        XCTAssertNil(try env.record(anonymous.keyId)?.accountHash, "no header: not counted for any account")
        let dump = try ChildProcess.run("redis-cli", ["-p", String(env.redis.port), "--no-raw", "HGETALL", "aa:{\(base64URL(first.keyId))}:key"]).output
        XCTAssertFalse(dump.contains("alice"), "the account value is never stored: \(dump)")

        XCTAssertEqual(try env.protectedRequest(first, counter: 1).status, 200, "two keys: both live")
        XCTAssertEqual(try env.protectedRequest(second, counter: 1).status, 200)
        let third = try env.attestedRefDevice(account: "alice")
        try expectRevoked(first, counter: 2, "the third key revoked the oldest")
        XCTAssertEqual(try env.protectedRequest(second, counter: 2).status, 200)
        XCTAssertEqual(try env.protectedRequest(third, counter: 1).status, 200)
        XCTAssertEqual(try env.protectedRequest(bob, counter: 1).status, 200, "another account is untouched")
        XCTAssertEqual(try env.protectedRequest(anonymous, counter: 1).status, 200)

        // A forgotten key leaves the account: the next registration revokes nobody.
        let forget = try env.lifecycleWithAssertion("forget", second, challenge: try env.challenge(keyId: second.keyId, purpose: "forget"), counter: 3)
        XCTAssertEqual(forget.status, 200, "\(forget)")
        let fourth = try env.attestedRefDevice(account: "alice")
        XCTAssertEqual(try env.protectedRequest(third, counter: 2).status, 200, "still two live keys: nobody revoked")
        XCTAssertEqual(try env.protectedRequest(fourth, counter: 1).status, 200)

        // attestctl finds the account's keys with the same account key, not with another.
        let store = ["--store", env.redis.url]
        let listed = try attestctl(["keys", "list", "--account", "alice", "--app", LifecycleGateway.appId] + store, environment: ["ATTESTCTL_ACCOUNT_KEY": LifecycleGateway.accountKey])
        XCTAssertEqual(listed.status, 0, listed.stderr)
        XCTAssertEqual(keyIds(listed.stdout), [third.keyId, fourth.keyId])
        let fromFile = try attestctl(["keys", "list", "--account", "alice", "--app", LifecycleGateway.appId, "--account-key-file", env.accountKeyFile.path] + store, environment: [:])
        XCTAssertEqual(keyIds(fromFile.stdout), [third.keyId, fourth.keyId], fromFile.stderr)
        let wrongKey = try attestctl(["keys", "list", "--account", "alice", "--app", LifecycleGateway.appId] + store, environment: ["ATTESTCTL_ACCOUNT_KEY": "not-the-account-key-0123456789"])
        XCTAssertEqual(wrongKey.status, 1, "another key hashes to another (empty) account: \(wrongKey)")
        let noKey = try attestctl(["keys", "list", "--account", "alice", "--app", LifecycleGateway.appId] + store, environment: ["ATTESTCTL_ACCOUNT_KEY": ""])
        XCTAssertEqual(noKey.status, 2, "\(noKey)")

        // Revocation by account: dry run changes nothing, --yes revokes both keys of alice only.
        let dry = try attestctl(["keys", "revoke", "--account", "alice", "--app", LifecycleGateway.appId, "--reason", "account closed", "--dry-run"] + store,
                                environment: ["ATTESTCTL_ACCOUNT_KEY": LifecycleGateway.accountKey])
        XCTAssertEqual(dry.status, 0, dry.stderr)
        XCTAssertEqual(try env.protectedRequest(third, counter: 3).status, 200)
        let revokedByAccount = try attestctl(["keys", "revoke", "--account", "alice", "--app", LifecycleGateway.appId, "--reason", "account closed", "--yes"] + store,
                                             environment: ["ATTESTCTL_ACCOUNT_KEY": LifecycleGateway.accountKey])
        XCTAssertEqual(revokedByAccount.status, 0, revokedByAccount.stderr)
        XCTAssertEqual(keyIds(revokedByAccount.stdout), [third.keyId, fourth.keyId])
        try expectRevoked(third, counter: 4, "revoked by account")
        try expectRevoked(fourth, counter: 2, "revoked by account")
        XCTAssertEqual(try env.protectedRequest(bob, counter: 2).status, 200)
    }

    /// Keys an operator revoked (`keys revoke --key-id`; the bulk revocation uses the same step) or deleted (`keys delete`)
    /// leave their account: the next registration does not revoke a live key for their slot (before,
    /// they kept counting and the oldest live key was revoked).
    func testOperatorRevokedOrDeletedKeysLeaveTheAccount() throws {
        let store = ["--store", env.redis.url]
        let first = try env.attestedRefDevice(account: "carol")
        let second = try env.attestedRefDevice(account: "carol")
        let revoked = try attestctl(["keys", "revoke", "--key-id", second.keyId, "--reason", "lost phone"] + store, environment: [:])
        XCTAssertEqual(revoked.status, 0, revoked.stderr)
        try expectRevoked(second, counter: 1, "revoked by the operator")
        let third = try env.attestedRefDevice(account: "carol")
        XCTAssertEqual(try env.protectedRequest(first, counter: 1).status, 200, "the revoked key no longer counts: the oldest live key stays")
        XCTAssertEqual(try env.protectedRequest(third, counter: 1).status, 200)
        let deleted = try attestctl(["keys", "delete", "--key-id", third.keyId] + store, environment: [:])
        XCTAssertEqual(deleted.status, 0, deleted.stderr)
        let fourth = try env.attestedRefDevice(account: "carol")
        XCTAssertEqual(try env.protectedRequest(first, counter: 2).status, 200, "the deleted key no longer counts")
        XCTAssertEqual(try env.protectedRequest(fourth, counter: 1).status, 200)
        let listed = try attestctl(["keys", "list", "--account", "carol", "--app", LifecycleGateway.appId] + store, environment: ["ATTESTCTL_ACCOUNT_KEY": LifecycleGateway.accountKey])
        XCTAssertEqual(keyIds(listed.stdout), [first.keyId, fourth.keyId], listed.stderr)
    }

    /// `--account` without the account key, with `--key-id`, or a revocation without `--reason` or
    /// without `--yes`/`--dry-run`: usage errors (exit 2) that touch nothing.
    func testAccountOptionUsageErrors() throws {
        let store = ["--store", env.redis.url]
        let key = ["ATTESTCTL_ACCOUNT_KEY": LifecycleGateway.accountKey]
        let noKey = try attestctl(["keys", "list", "--account", "alice", "--app", LifecycleGateway.appId] + store, environment: [:])
        XCTAssertEqual(noKey.status, 2, "\(noKey)")
        XCTAssertTrue(noKey.stderr.contains("ATTESTCTL_ACCOUNT_KEY"), noKey.stderr)
        XCTAssertEqual(try attestctl(["keys", "revoke", "--account", "alice", "--app", LifecycleGateway.appId, "--yes"] + store, environment: key).status, 2, "no --reason")
        XCTAssertEqual(try attestctl(["keys", "revoke", "--account", "alice", "--app", LifecycleGateway.appId, "--reason", "r"] + store, environment: key).status, 2,
                       "neither --yes nor --dry-run")
        XCTAssertEqual(try attestctl(["keys", "revoke", "--account", "alice", "--app", LifecycleGateway.appId, "--key-id", String(repeating: "A", count: 43) + "=",
                                      "--reason", "r", "--yes"] + store, environment: key).status, 2)
        XCTAssertEqual(try attestctl(["keys", "list", "--account-key-file", env.accountKeyFile.path] + store, environment: [:]).status, 2,
                       "a key file without --account")
        let noApp = try attestctl(["keys", "list", "--account", "alice"] + store, environment: key)
        XCTAssertEqual(noApp.status, 2, "an account belongs to one app: --app is required: \(noApp)")
        XCTAssertTrue(noApp.stderr.contains("--app"), noApp.stderr)
        XCTAssertEqual(try attestctl(["keys", "revoke", "--account", "alice", "--reason", "r", "--yes"] + store, environment: key).status, 2,
                       "a revocation by account without --app")
        let none = try attestctl(["keys", "revoke", "--account", "nobody", "--app", LifecycleGateway.appId, "--reason", "r", "--yes"] + store, environment: key)
        XCTAssertEqual(none.status, 1, "an account without keys: nothing matched")
    }

    /// Two apps configured with the same account header and account key, the same account value:
    /// two accounts (the App ID is part of the hash). App B's `max_keys_per_account: 1` revokes only
    /// app B's older key, never app A's (before, one shared index made app B's third registration
    /// revoke app A's keys); `attestctl keys list|revoke --account V --app ID` finds each app's keys.
    func testTwoAppsWithTheSameAccountKeyKeepSeparateAccounts() throws {
        env.stop()
        let otherApp = "ABCDE12345.com.example.other"
        env = try LifecycleGateway(secondAppId: otherApp)
        let a1 = try env.attestedRefDevice(account: "alice")
        let a2 = try env.attestedRefDevice(account: "alice")
        let b1 = try env.attestedRefDevice(account: "alice", appId: otherApp)
        XCTAssertEqual(try env.record(a1.keyId)?.accountHash?.description, try opensslHMAC("alice"))
        XCTAssertEqual(try env.record(b1.keyId)?.accountHash?.description, try opensslHMAC("alice", appId: otherApp))
        XCTAssertNotEqual(try env.record(a1.keyId)?.accountHash, try env.record(b1.keyId)?.accountHash, "one account per app")
        let b2 = try env.attestedRefDevice(account: "alice", appId: otherApp)
        try expectRevoked(b1, counter: 1, appId: otherApp, "app B's limit of 1 revoked app B's older key")
        XCTAssertEqual(try env.protectedRequest(b2, counter: 1, appId: otherApp).status, 200)
        XCTAssertEqual(try env.protectedRequest(a1, counter: 1).status, 200, "app B's limit never revokes app A's keys")
        XCTAssertEqual(try env.protectedRequest(a2, counter: 1).status, 200)

        let store = ["--store", env.redis.url]
        let key = ["ATTESTCTL_ACCOUNT_KEY": LifecycleGateway.accountKey]
        let listedA = try attestctl(["keys", "list", "--account", "alice", "--app", LifecycleGateway.appId] + store, environment: key)
        XCTAssertEqual(listedA.status, 0, listedA.stderr)
        XCTAssertEqual(keyIds(listedA.stdout), [a1.keyId, a2.keyId])
        let listedB = try attestctl(["keys", "list", "--account", "alice", "--app", otherApp] + store, environment: key)
        XCTAssertEqual(listedB.status, 0, listedB.stderr)
        XCTAssertEqual(keyIds(listedB.stdout), [b2.keyId])
        let revokedB = try attestctl(["keys", "revoke", "--account", "alice", "--app", otherApp, "--reason", "closed", "--yes"] + store,
                                     environment: key)
        XCTAssertEqual(revokedB.status, 0, revokedB.stderr)
        XCTAssertEqual(keyIds(revokedB.stdout), [b2.keyId])
        try expectRevoked(b2, counter: 2, appId: otherApp, "revoked by app B's account")
        XCTAssertEqual(try env.protectedRequest(a1, counter: 2).status, 200, "app A's account is untouched")
    }

    /// The account header twice (or empty) is refused before anything is stored; once, it is accepted.
    func testAccountHeaderTwiceIsRefused() throws {
        guard let ca = env.cas.ref else { throw XCTSkip(SharedFixtures.absentMessage) }
        let device = try RefDevice(directory: env.work, caDirectory: ca)
        let challenge = try env.challenge(for: device, purpose: "attest")
        let attestation = try device.attestation(challenge: challenge, appId: LifecycleGateway.appId, environment: "development", caDirectory: ca)
        let fields = ["keyId": device.keyId, "challenge": challenge, "attestation": attestation]
        let twice = try env.post("attest", fields, headers: [("X-Account", "alice"), ("X-Account", "mallory")])
        XCTAssertEqual(twice.status, 400, "\(twice)")
        XCTAssertEqual(twice.errorCode, "account_invalid")
        XCTAssertNil(try env.record(device.keyId), "nothing stored")
        let once = try env.post("attest", fields, headers: [("X-Account", "alice")])
        XCTAssertEqual(once.status, 201, "\(once)")
        XCTAssertEqual(try env.record(device.keyId)?.accountHash?.description, try opensslHMAC("alice"))
    }
}
