import Foundation
import GatewayTestSupport
import XCTest

/// The gateway on a real local Redis Cluster (DESIGN.md section 11, issue 13), under a steady stream of
/// valid protected requests: a primary SIGKILLed (its replica is promoted; refusals only as 503 while
/// the slot has no primary; with `wait_replicas: 1` no accepted assertion is accepted again), slots
/// resharded with `redis-cli --cluster reshard` (no failed request), two gateway processes racing the
/// same assertion (exactly one accepted), `attestctl keys` against the cluster.
final class ClusterScaleOutTests: XCTestCase {
    private var env: ClusterGatewayEnvironment?

    override func tearDown() {
        env?.stop()
        env = nil
        super.tearDown()
    }

    private func environment(waitReplicas: Int = 1) throws -> ClusterGatewayEnvironment {
        let made = try ClusterGatewayEnvironment(waitReplicas: waitReplicas)
        env = made
        return made
    }

    /// Attested software devices whose keys live on different primaries when `spread`.
    private func devices(_ env: ClusterGatewayEnvironment, count: Int) throws -> [ClientDevice] {
        try (0..<count).map { _ in try env.attestedDevice(.sim) }
    }

    /// Waits until `condition` holds, polling the stream; fails the test on timeout.
    private func waitUntil(_ what: String, timeout: TimeInterval = 60, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if try condition() { return }
            usleep(50_000)
        }
        throw SetupFailure("timed out waiting for \(what)")
    }

    /// With three primaries and one replica each, `wait_replicas: 1` leaves the failed-over shard
    /// without a replica: its writes answer 503 (WAIT is not met) until the old primary is back as a
    /// replica of the new one; the other shards serve throughout.
    func testPrimaryKilledUnderLoadFailsOverWithoutReplay() throws {
        let env = try environment(waitReplicas: 1)
        let cluster = env.cluster
        let devices = try self.devices(env, count: 6)
        let victimSlot = try env.slot(devices[0])
        let victim = try cluster.primary(ofSlot: victimSlot)
        let (_, replicas) = try cluster.roles()
        let heir = try XCTUnwrap(replicas.first { $0.value == victim }?.key, "the victim has a replica")
        let onVictim = try devices.indices.filter { try cluster.primary(ofSlot: try env.slot(devices[$0])) == victim }
        defer {
            // Leave the shared cluster whole whatever happened.
            if !cluster.runningPorts.contains(victim) { try? cluster.restart(victim) }
            XCTAssertNoThrow(try cluster.waitUntilHealthy(), "the test left the shared cluster unhealthy")
        }

        let readyz = "http://127.0.0.1:\(env.adminPort)/readyz"
        func storeWord() -> String? { StoreOutageTests.readiness((try? Curl.get(readyz))?.text ?? "")?.store }
        try waitUntil("readiness says the store is ok") { storeWord() == "ok" }
        let stream = RequestStream(env, devices: devices)
        var stopped = false
        defer { if !stopped { stream.stop() } }
        try waitUntil("requests accepted before the kill") { stream.requests.filter { $0.status == 200 }.count >= 12 }
        let killedAt = Date()
        cluster.kill(victim)
        // Readiness reports the lost primary (every loop had a connection to it) ...
        try waitUntil("readiness says the store is unavailable") { storeWord() == "unavailable" }
        // The replica is promoted; the gateway finds it without a restart.
        try waitUntil("the replica promoted") { (try? cluster.roles().primaries.contains(heir)) == true }
        let promotedAt = Date()
        // ... and recovers once the map has the promoted replica in its place.
        try waitUntil("readiness ok again after the promotion") { storeWord() == "ok" }
        try waitUntil("requests on the other shards after the promotion") {
            stream.requests.filter { !onVictim.contains($0.device) && $0.when > promotedAt && $0.status == 200 }.count >= 3
        }
        try waitUntil("requests on the promoted shard answered (503: no replica to WAIT for)") {
            stream.requests.contains { onVictim.contains($0.device) && $0.when > promotedAt.addingTimeInterval(1) && $0.challengeStatus == 503 }
        }
        // The old primary comes back as a replica of the new one: WAIT is met again.
        try cluster.restart(victim)
        let restartedAt = Date()
        try waitUntil("requests on the failed-over slot accepted again") {
            stream.requests.filter { onVictim.contains($0.device) && $0.when > restartedAt && $0.status == 200 }.count >= 3
        }
        stream.stop()
        stopped = true
        let requests = stream.requests
        XCTAssertEqual(try cluster.primary(ofSlot: victimSlot), heir)

        // Refusals only as 503 (challenge or protected request), nothing else.
        for entry in requests {
            XCTAssertTrue([201, 503].contains(entry.challengeStatus), "challenge answered \(entry.challengeStatus)")
            if entry.challengeStatus == 201 { XCTAssertTrue([200, 503].contains(entry.status), "request answered \(entry.status)") }
        }
        XCTAssertTrue(requests.contains { onVictim.contains($0.device) && $0.when > killedAt && ($0.challengeStatus == 503 || $0.status == 503) },
                      "the slot had no primary for a while")
        // No accepted assertion is accepted again after the kill (wait_replicas 1: the promoted replica
        // holds every write the gateway acknowledged).
        let accepted = requests.compactMap { $0.status == 200 ? $0.request : nil }
        XCTAssertGreaterThan(accepted.count, 15)
        for request in accepted {
            let replay = try env.send(request)
            XCTAssertEqual(replay.status, 401, "replay of counter \(request.counter) after the failover: \(replay)")
        }
    }

    /// Without `wait_replicas`, the promoted replica serves its slots as soon as the gateway's map has
    /// it: requests on the failed-over shard are accepted again without the old primary coming back.
    func testPrimaryKilledWithoutWaitIsServedByThePromotedReplica() throws {
        let env = try environment(waitReplicas: 0)
        let cluster = env.cluster
        let devices = try self.devices(env, count: 4)
        let victim = try cluster.primary(ofSlot: try env.slot(devices[0]))
        let heir = try XCTUnwrap(try cluster.roles().replicas.first { $0.value == victim }?.key, "the victim has a replica")
        defer {
            if !cluster.runningPorts.contains(victim) { try? cluster.restart(victim) }
            XCTAssertNoThrow(try cluster.waitUntilHealthy(), "the test left the shared cluster unhealthy")
        }
        let stream = RequestStream(env, devices: devices)
        var stopped = false
        defer { if !stopped { stream.stop() } }
        try waitUntil("requests accepted before the kill") { stream.requests.filter { $0.status == 200 }.count >= 6 }
        cluster.kill(victim)
        try waitUntil("the replica promoted") { (try? cluster.roles().primaries.contains(heir)) == true }
        let promotedAt = Date()
        try waitUntil("requests on the failed-over slot accepted by the promoted replica") {
            stream.requests.filter { $0.device == 0 && $0.when > promotedAt && $0.status == 200 }.count >= 3
        }
        stream.stop()
        stopped = true
        XCTAssertFalse(cluster.runningPorts.contains(victim), "served without the old primary")
        for entry in stream.requests {
            XCTAssertTrue([201, 503].contains(entry.challengeStatus), "challenge answered \(entry.challengeStatus)")
            if entry.challengeStatus == 201 { XCTAssertTrue([200, 503].contains(entry.status), "request answered \(entry.status)") }
        }
    }

    func testReshardUnderLoadFailsNoRequest() throws {
        let env = try environment(waitReplicas: 0)
        let cluster = env.cluster
        let candidates = try self.devices(env, count: 8)
        // The device whose slot is among the fewest leading slots of its primary: `reshard` moves a
        // source's slots in ascending order, so moving that many slots moves this device's slot.
        var best: (device: Int, source: UInt16, count: Int)?
        for (index, device) in candidates.enumerated() {
            let slot = try env.slot(device)
            let source = try cluster.primary(ofSlot: slot)
            let count = try cluster.slots(of: source).filter { $0 <= slot }.count
            if best == nil || count < best!.count { best = (index, source, count) }
        }
        let chosen = try XCTUnwrap(best)
        let slot = try env.slot(candidates[chosen.device])
        let target = try XCTUnwrap(try cluster.roles().primaries.first { $0 != chosen.source })
        let stream = RequestStream(env, devices: candidates)
        var stopped = false
        defer { if !stopped { stream.stop() } }
        try waitUntil("requests accepted before the reshard") { stream.requests.filter { $0.status == 200 }.count >= 8 }
        let started = stream.requests.count
        let reshard = try ChildProcess("redis-cli", [
            "--cluster", "reshard", "127.0.0.1:\(chosen.source)", "--cluster-from", try cluster.nodeID(chosen.source),
            "--cluster-to", try cluster.nodeID(target), "--cluster-slots", String(chosen.count), "--cluster-yes",
        ])
        guard let status = reshard.waitForExit(timeout: 300) else { throw SetupFailure("reshard still running: \(reshard.output)") }
        XCTAssertEqual(status, 0, reshard.output)
        try waitUntil("requests after the reshard") { stream.requests.count >= started + 3 * candidates.count + 8 }
        stream.stop()
        stopped = true
        XCTAssertEqual(try cluster.primary(ofSlot: slot), target, "the chosen device's slot moved")
        let requests = stream.requests
        for entry in requests {
            XCTAssertEqual(entry.challengeStatus, 201, "challenge during the reshard")
            XCTAssertEqual(entry.status, 200, "request during the reshard")
        }
        XCTAssertTrue(requests[started...].contains { $0.device == chosen.device && $0.status == 200 })
        try cluster.waitUntilHealthy()
    }

    func testTwoGatewayProcessesRaceOneAssertionExactlyOneAccepted() throws {
        let cluster = try SharedRedisCluster.cluster()
        try cluster.waitUntilHealthy()
        let cas = try TestCAs.shared()
        let work = try E2EPaths.temporaryDirectory("cluster-race")
        defer { try? FileManager.default.removeItem(at: work) }
        let upstream = try UpstreamProcess()
        defer { upstream.stop() }
        let dead = try ReservedPort()
        let yaml = ClusterGatewayEnvironment.yaml(cluster: cluster, waitReplicas: 1, upstreamPort: upstream.port,
                                                  deadPort: dead.port, roots: cas.trustedRoots)
        let first = try ConfiguredGateway(yaml: yaml, directory: work, name: "a.yaml")
        defer { first.process.stop() }
        let second = try ConfiguredGateway(yaml: yaml, directory: work, name: "b.yaml")
        defer { second.process.stop() }
        let a = PortClient(port: first.port, work: work, cas: cas)
        let b = PortClient(port: second.port, work: work, cas: cas)
        let device = try a.attestedDevice(.sim)
        for counter: UInt32 in 1...6 {
            let request = try a.signedRequest(device, target: "/v1/protected/race", counter: counter)
            let boxes = [CompletionBox<Int>(), CompletionBox<Int>()]
            DispatchQueue.concurrentPerform(iterations: 2) { index in
                let reply = try? (index == 0 ? a.send(request) : b.send(request))
                boxes[index].put(reply?.status ?? -1)
            }
            let replies = boxes.map { $0.take(timeout: 30) ?? -2 }
            let statuses = replies.sorted()
            XCTAssertEqual(statuses, [200, 401], "counter \(counter): exactly one gateway accepts: \(replies)")
        }
        // Failing variant: a request sent to one gateway only is accepted (the race, not the request, refuses one).
        let single = try b.signedRequest(device, target: "/v1/protected/race", counter: 7)
        XCTAssertEqual(try b.send(single).status, 200)
    }

    func testAttestctlKeysAgainstTheCluster() throws {
        let env = try environment(waitReplicas: 0)
        let devices = try self.devices(env, count: 4)
        let attestctl = try BuiltProducts.executable("attestctl")
        let url = env.cluster.url
        // Show: a record on whichever primary.
        for device in devices {
            let shown = try ChildProcess.run(attestctl, ["keys", "show", "--store", url, "--key-id", device.keyId])
            XCTAssertEqual(shown.status, 0, shown.output)
            XCTAssertTrue(shown.output.contains(base64URL(device.keyId)) || shown.output.contains(device.keyId), shown.output)
        }
        // List: every device, from every primary.
        let listed = try ChildProcess.run(attestctl, ["keys", "list", "--store", url, "--limit", "100000"])
        XCTAssertEqual(listed.status, 0, listed.output)
        for device in devices {
            XCTAssertTrue(listed.output.contains(base64URL(device.keyId)) || listed.output.contains(device.keyId), "listed \(device.keyId)")
        }
        // Revoke through attestctl: the gateway refuses the key at once.
        let revoked = try ChildProcess.run(attestctl, ["keys", "revoke", "--store", url, "--key-id", devices[0].keyId, "--reason", "test"])
        XCTAssertEqual(revoked.status, 0, revoked.output)
        let refused = try env.send(try env.signedRequest(devices[0], target: "/v1/protected/x", counter: 1))
        XCTAssertEqual(refused.status, 403, "\(refused)")
        XCTAssertEqual(try env.send(try env.signedRequest(devices[1], target: "/v1/protected/x", counter: 1)).status, 200)
    }
}
