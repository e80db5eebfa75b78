import Foundation
import Gateway
import GatewayStore
import GatewayTestSupport
import XCTest

/// One gateway under test with its real parts: a redis-server (or the memory store), the Python
/// upstream, the test CAs, a movable clock; plus the client-side steps of the protocol
/// (DESIGN.md section 1) driven through curl.
///
/// Routes of the standard configuration (`E2EEnvironment.yaml`):
/// `/v1/protected` enforce (max_body 64KiB), `/v1/windowed` enforce with counter_window 8,
/// `/v1/monitored` monitor, `/v1/failopen` enforce fail_open, `/v1/open` off (max_body 1KiB),
/// `/v1/down` off to an upstream nobody listens on, `/v1/enforced-down` enforce to that upstream,
/// `/v1/enforced-slow` (enforce) and `/v1/open-slow` (off) with a route `response_timeout` of 300ms.
/// No catch-all: anything else is 404.
/// `trusted_proxies: [127.0.0.2/32]`: clients connecting from 127.0.0.2 act as a trusted proxy,
/// from 127.0.0.1 (the default) as any client.
final class E2EEnvironment: GatewayClient, @unchecked Sendable {  // immutable after init; parts lock themselves
    enum StoreKind { case redis, memory }

    /// The app the gateway accepts (development keys).
    static let appId = "ABCDE12345.com.example.e2e"
    /// An app the gateway does not know.
    static let unknownAppId = "QQQQQ11111.com.example.unknown"

    let storeKind: StoreKind
    /// `endpoints.next_challenge` of the gateway.
    let nextChallenge: Bool
    /// How the tests' requests reach the data listener (a TLS transport makes the listener TLS).
    let transport: ClientTransport
    let redis: RedisServer?
    let upstream: UpstreamProcess
    let clock = MovableClock()
    let cas: TestCAs
    let work: URL
    let gateway: GatewayUnderTest
    /// A loopback port nobody listens on (the `down` upstream): bound, never listening, held while
    /// the environment lives.
    let dead: ReservedPort
    let deadPort: UInt16

    var port: UInt16 { gateway.port }
    var adminPort: UInt16 { gateway.adminPort }

    /// - Parameter admin: the `admin:` value (an address, or a mapping such as
    ///   `{address: 127.0.0.1:0, ready_requires_store: true}`).
    /// - Parameter nextChallenge: `endpoints.next_challenge` (default true, as the gateway's default).
    init(store: StoreKind, transport: ClientTransport = .http1, admin: String = "127.0.0.1:0",
         nextChallenge: Bool = true) throws {
        storeKind = store
        self.nextChallenge = nextChallenge
        self.transport = transport
        cas = try TestCAs.shared()
        work = try E2EPaths.temporaryDirectory("env")
        redis = store == .redis ? try RedisServer() : nil
        upstream = try UpstreamProcess()
        dead = try ReservedPort()
        deadPort = dead.port
        var listen = "127.0.0.1:0"
        if transport.tlsCA != nil {
            let certificate = TestPKI.shared.address
            listen = "[{address: \"127.0.0.1:0\", tls: {certificates: [{chain: \"\(certificate.chainPath)\", key: \"\(certificate.keyPath)\"}]}}]"
        }
        let yaml = E2EEnvironment.yaml(store: redis?.url ?? "memory", upstreamPort: upstream.port, deadPort: deadPort,
                                       roots: cas.trustedRoots, listen: listen, admin: admin, nextChallenge: nextChallenge)
        gateway = try GatewayUnderTest(yaml: yaml, baseDirectory: work.path, clock: clock.gatewayClock)
    }

    func stop() {
        gateway.stop()
        upstream.stop()
        redis?.stop()
        try? FileManager.default.removeItem(at: work)
    }

    /// The standard configuration.
    static func yaml(store: String, upstreamPort: UInt16, deadPort: UInt16, roots: [String], access: Bool = false,
                     listen: String = "127.0.0.1:0", admin: String = "127.0.0.1:0", nextChallenge: Bool = true) -> String {
        """
        listen: \(listen)
        admin: \(admin)
        trusted_proxies: [127.0.0.2/32]
        store:
          url: \(store)
          command_timeout: 500ms
          connect_timeout: 500ms
        apps:
          - app_id: \(appId)
            environment: development
        trust:
          extra_roots:
        \(roots.map { "    - \($0)" }.joined(separator: "\n"))
        \(nextChallenge ? "" : "endpoints: {next_challenge: false}")
        upstreams:
          app: http://127.0.0.1:\(upstreamPort)
          down: http://127.0.0.1:\(deadPort)
        routes:
          - name: protected
            path_prefix: /v1/protected
            upstream: app
            mode: enforce
            max_body: 64KiB
          - name: windowed
            path_prefix: /v1/windowed
            upstream: app
            counter_window: 8
          - name: monitored
            path_prefix: /v1/monitored
            upstream: app
            mode: monitor
          - name: failopen
            path_prefix: /v1/failopen
            upstream: app
            on_store_error: fail_open
          - name: open
            path_prefix: /v1/open
            upstream: app
            mode: off
            max_body: 1KiB
          - name: broken
            path_prefix: /v1/down
            upstream: down
            mode: off
          - name: enforced-down
            path_prefix: /v1/enforced-down
            upstream: down
          - name: enforced-slow
            path_prefix: /v1/enforced-slow
            upstream: app
            response_timeout: 300ms
          - name: open-slow
            path_prefix: /v1/open-slow
            upstream: app
            mode: off
            response_timeout: 300ms
        timeouts:
          header: 1s
          drain: 5s
        log:
          access: \(access)

        """
    }

    // MARK: - Store state

    /// The key record through the store API (both stores).
    func storedKey(_ device: ClientDevice) throws -> KeyRecord? {
        guard let bytes = Data(base64Encoded: device.keyId) else { return nil }
        let keyId = try KeyID(Array(bytes))
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var outcome: Result<KeyRecord?, StoreUnavailable>?
        gateway.store.fetchKey(keyId) { result in
            outcome = result
            done.signal()
        }
        guard done.wait(timeout: .now() + 10) == .success, let outcome else { throw ChildProcessError.notReady("fetchKey timed out") }
        return try outcome.get()
    }

    /// The stored counter (store API), nil when there is no record.
    func storedCounter(_ device: ClientDevice) throws -> UInt32? { try storedKey(device)?.counter }

    /// `redis-cli HGETALL aa:{<keyId b64url>}:key` (text fields; binary ones escaped by redis-cli).
    func redisKeyHash(_ device: ClientDevice) throws -> [String: String] {
        guard let redis else { return [:] }
        let result = try ChildProcess.run("redis-cli", ["-p", String(redis.port), "--no-raw", "HGETALL", "aa:{\(base64URL(device.keyId))}:key"])
        var values: [String] = []
        for line in result.output.split(separator: "\n") {
            guard let close = line.firstIndex(of: ")") else { continue }
            var item = line[line.index(after: close)...].trimmingCharacters(in: .whitespaces)
            if item.hasPrefix("\"") && item.hasSuffix("\"") && item.count >= 2 { item = String(item.dropFirst().dropLast()) }
            values.append(item)
        }
        var hash: [String: String] = [:]
        var i = 0
        while i + 1 < values.count {
            hash[values[i]] = values[i + 1]
            i += 2
        }
        return hash
    }

    /// The keys Redis holds for `device` (`KEYS aa:{<keyId>}:*`).
    func redisKeys(_ device: ClientDevice) throws -> [String] {
        guard let redis else { return [] }
        let out = try ChildProcess.run("redis-cli", ["-p", String(redis.port), "KEYS", "aa:{\(base64URL(device.keyId))}:*"]).output
        return out.split(separator: "\n").map(String.init).filter { !$0.isEmpty }.sorted()
    }
}

/// A request signed by a device, with its evidence.
struct SignedRequest {
    let method: String
    let target: String
    let body: [UInt8]
    let keyId: String
    let challenge: String
    let assertion: String
    let counter: UInt32

    /// `App-Attest-Key-Id`, `App-Attest-Challenge`, `App-Attest-Assertion`.
    var evidenceHeaders: [(String, String)] {
        [("App-Attest-Key-Id", keyId), ("App-Attest-Challenge", challenge), ("App-Attest-Assertion", assertion)]
    }

    /// The raw HTTP/1.1 bytes (Content-Length, Connection: close) for the race client.
    var raw: [UInt8] { RaceClient.rawRequest(method: method, target: target, headers: evidenceHeaders, body: body) }
}
