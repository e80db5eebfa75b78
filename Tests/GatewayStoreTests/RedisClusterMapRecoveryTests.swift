import Foundation
import GatewayRules
import GatewayStore
@testable import GatewayRedis
import GatewayTestSupport
import XCTest

/// How the cluster store's slot map recovers from answers a real cluster gives only when it is
/// misconfigured or in trouble, against a scripted cluster node (a Python RESP server on a free
/// port: one node serving every slot, which can be told to answer `MOVED` to a dead address):
/// - a wrong `MOVED` patches the loop's map only until the next refresh ends, even when that refresh
///   finds the cluster's map unchanged (probe: one `CLUSTER SETSLOT ... NODE` on one node left the
///   slot answering 503 until a restart, and `/readyz` not ready);
/// - readiness (`pingPrimaries`) is refused while the map has slots without a primary, although
///   every primary answers `PING` during CLUSTERDOWN (probe: `/readyz` 200 while every request 503).
final class RedisClusterMapRecoveryTests: XCTestCase {
    /// The scripted node: `CLUSTER SLOTS` (one range, itself, or the ranges `FAKE SLOTS a-b ...`
    /// set), `PING`, `SCRIPT LOAD` (the SHA1 the store's handshake expects), `HMGET` (every field nil, or `-MOVED slot 127.0.0.1:port` after `FAKE MOVED
    /// slot port` until `FAKE HEAL`), `+OK` to anything else.
    private static let node = #"""
import hashlib, socket, sys, threading
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(64)
port = srv.getsockname()[1]
state = {"moved": None, "ranges": [(0, 16383)]}
print("READY %d" % port, flush=True)
def bulk(s): return b"$%d\r\n%s\r\n" % (len(s), s)
def reply(args):
    name = args[0].upper()
    if name == b"CLUSTER" and args[1].upper() == b"SLOTS":
        parts = [b"*3\r\n:%d\r\n:%d\r\n*3\r\n%s:%d\r\n%s" % (a, b, bulk(b"127.0.0.1"), port, bulk(b"id")) for a, b in state["ranges"]]
        return b"*%d\r\n" % len(parts) + b"".join(parts)
    if name == b"PING": return b"+PONG\r\n"
    if name == b"SCRIPT" and args[1].upper() == b"LOAD": return bulk(hashlib.sha1(args[2]).hexdigest().encode())
    if name == b"FAKE":
        if args[1] == b"MOVED": state["moved"] = (int(args[2]), int(args[3]))
        elif args[1] == b"HEAL": state["moved"] = None
        elif args[1] == b"SLOTS": state["ranges"] = [tuple(int(x) for x in r.split(b"-")) for r in args[2:]]
        return b"+OK\r\n"
    if name == b"HMGET":
        if state["moved"]: return b"-MOVED %d 127.0.0.1:%d\r\n" % state["moved"]
        return b"*%d\r\n" % (len(args) - 2) + b"$-1\r\n" * (len(args) - 2)
    return b"+OK\r\n"
def serve(c):
    f = c.makefile("rb")
    try:
        while True:
            line = f.readline()
            if not line: return
            n = int(line[1:]); args = []
            for _ in range(n):
                size = int(f.readline()[1:]); args.append(f.read(size + 2)[:-2])
            c.sendall(reply(args))
    except Exception:
        return
while True:
    c, _ = srv.accept(); threading.Thread(target=serve, args=(c,), daemon=True).start()
"""#

    private var processes: [ChildProcess] = []
    private var stores: [RedisStore] = []

    override func tearDown() {
        for store in stores { store.close() }
        for process in processes { process.stop(signal: SIGKILL) }
        super.tearDown()
    }

    /// Starts the scripted node and returns its port.
    private func startNode() throws -> UInt16 {
        try ChildProcess.require("python3")
        let process = try ChildProcess("python3", ["-c", RedisClusterMapRecoveryTests.node])
        processes.append(process)
        var port: UInt16?
        let deadline = Date().addingTimeInterval(10)
        while port == nil && Date() < deadline && process.isRunning {
            port = process.output.split(separator: "\n").first { $0.hasPrefix("READY ") }.flatMap { UInt16($0.dropFirst(6)) }
            if port == nil { usleep(10_000) }
        }
        guard let port else { throw SetupFailure("the scripted cluster node did not start: \(process.output)") }
        return port
    }

    private func tell(_ port: UInt16, _ words: [String]) throws {
        XCTAssertEqual(try ChildProcess.run("redis-cli", ["-p", String(port), "FAKE"] + words).output.trimmingCharacters(in: .whitespacesAndNewlines), "OK")
    }

    private func store(seed port: UInt16) throws -> RedisStore {
        var configuration = RedisStore.Configuration(url: try RedisURL(parsing: "redis+cluster://127.0.0.1:\(port)"))
        configuration.connections = 1
        configuration.commandTimeout = 300
        let store = try RedisStore(configuration: configuration)
        stores.append(store)
        return store
    }

    private func fetch(_ store: RedisStore, _ keyId: KeyID) -> Result<KeyRecord?, StoreUnavailable>? {
        let box = CompletionBox<Result<KeyRecord?, StoreUnavailable>>()
        store.fetchKey(keyId) { box.put($0) }
        return box.take(timeout: 10)
    }

    /// Whether `condition` holds within `timeout` seconds (checked every 50 ms).
    private func eventually(timeout: TimeInterval, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        repeat {
            if condition() { return true }
            usleep(50_000)
        } while Date() < deadline
        return condition()
    }

    /// `/readyz`'s question: PING on every router's primaries (with the map's coverage).
    private func ping(_ store: RedisStore) -> Result<Void, StoreUnavailable>? {
        let box = CompletionBox<Result<Void, StoreUnavailable>>()
        store.pingEveryConnection { box.put($0) }
        return box.take(timeout: 10)
    }

    func testAWrongMovedIsUndoneByTheNextRefreshEvenWhenTheMapDidNotChange() throws {
        let port = try startNode()
        let dead = try ReservedPort()  // bound, never listening: connections to it are refused
        let store = try store(seed: port)
        let keyId = try KeyID((0..<32).map { _ in UInt8.random(in: 0...255) })
        guard case .success(nil)? = fetch(store, keyId) else { return XCTFail("the node answers before the MOVED") }

        let slot = RedisClusterSlot.of(key: RedisKeySchema(prefix: Array("aa".utf8)).keyRecordName(keyId))
        try tell(port, ["MOVED", String(slot), String(dead.port)])
        guard case .failure? = fetch(store, keyId) else { return XCTFail("a slot moved to a dead address answered") }
        try tell(port, ["HEAL"])
        // The refresh the MOVED asked for read the same map from the node; the next command must go
        // back to the node (before: to the dead address, until the process restarted).
        XCTAssertTrue(eventually(timeout: 3) {
            if case .success(nil)? = self.fetch(store, keyId) { return true }
            return false
        }, "the slot still goes to the address of the wrong MOVED")
        XCTAssertNotNil(try? ping(store)?.get(), "ready again")
    }

    func testReadinessIsRefusedWhileSlotsHaveNoPrimary() throws {
        let port = try startNode()
        try tell(port, ["SLOTS", "0-16382"])  // slot 16383 served by nobody: CLUSTERDOWN on a real cluster
        let store = try store(seed: port)
        var last: Result<Void, StoreUnavailable>?
        _ = eventually(timeout: 3) {
            last = self.ping(store)
            if case .failure(let e)? = last { return e.detail.contains("slots have no primary") }
            return false
        }
        guard case .failure(let error)? = last else { return XCTFail("ready with a slot nobody serves: \(String(describing: last))") }
        XCTAssertTrue(error.detail.contains("1 of 16384 slots have no primary"), error.detail)
        // Passing variant: every slot served again; the refresh the failed check asked for sees it.
        try tell(port, ["SLOTS", "0-16383"])
        XCTAssertTrue(eventually(timeout: 3) { (try? self.ping(store)?.get()) != nil }, "ready once every slot is served")
    }
}
