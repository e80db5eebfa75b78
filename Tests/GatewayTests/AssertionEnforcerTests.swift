import AppAttest
import AttestCrypto
import AttestSimulator
import Foundation
@testable import Gateway
import GatewayIO
import GatewayConfig
import GatewayHTTP
import GatewayRules
import GatewayStore
import GatewayTestSupport
import XCTest

/// The enforcement decision without sockets: a real memory store, a software device, requests built
/// as the proxy core hands them over. The same flows run over real sockets in the end-to-end tests.
final class AssertionEnforcerTests: XCTestCase {
    static let appId = "ABCDE12345.com.example.app"
    static let otherAppId = "ZZZZZ99999.com.example.other"

    /// An in-memory gateway state: store, cache, enforcer, one attested device.
    final class Fixture: @unchecked Sendable {  // mutated only on the test's thread
        let store = MemoryStore()
        let keys = KeyCache()
        var now: Int64 = 1_800_000_000_000
        let enforcer: AssertionEnforcer
        let issuer: ChallengeIssuer
        var device: SoftwareDevice
        let family = HeaderFamily(HeadersConfiguration())
        let upstream: UpstreamPool
        let group = EventLoopGroup(loopCount: 1)

        init(environment: AppAttestEnvironment = .development, appId: String = AssertionEnforcerTests.appId) throws {
            let clock = GatewayClock { NowBox.shared.value }
            issuer = ChallengeIssuer(store: store, byteCount: 32, ttlMillis: 300_000, clock: clock)
            let apps = [AssertionEnforcerTests.appId: AppEntry(AppConfiguration(appID: AppID(AssertionEnforcerTests.appId)!, environment: .any), refreshesRisk: false),
                        AssertionEnforcerTests.otherAppId: AppEntry(AppConfiguration(appID: AppID(AssertionEnforcerTests.otherAppId)!, environment: .production), refreshesRisk: false)]
            enforcer = AssertionEnforcer(store: store, keys: keys, apps: apps, issuer: issuer, clock: clock, family: family)
            device = try SoftwareDevice()
            upstream = try UpstreamPool(GatewayHTTP.UpstreamConfiguration(name: "unused", address: .tcp(host: "127.0.0.1", port: 9)), group: group)
            NowBox.shared.value = now
            let record = try KeyRecord(keyId: try KeyID(device.keyId), publicKey: device.publicKeyPoint,
                                       environment: environment == .development ? .development : .production,
                                       appId: appId, createdAt: now)
            let registered = try challenge(.attest)
            let outcome = try AssertionEnforcerTests.wait { done in self.store.registerKey(record, challenge: try! Challenge(registered), now: self.now, completion: done) }
            guard case .success(.accepted) = outcome else { throw SetupFailure("could not register the key: \(outcome)") }
        }

        deinit { upstream.shutdown(); group.shutdown() }

        /// A challenge issued through the gateway's issuer for this device's key.
        func challenge(_ purpose: ChallengePurpose, keyId: [UInt8]? = nil) throws -> [UInt8] {
            let result = try AssertionEnforcerTests.wait { done in self.issuer.issue(keyId: try! KeyID(keyId ?? self.device.keyId), purpose: purpose, completion: done) }
            return try result.get().bytes
        }

        func route(mode: RouteConfiguration.Mode = .enforce, window: Int = 0, environment: AppAttestEnvironment? = nil,
                   apps: [AppID]? = nil, bind: [String] = [], failOpen: Bool = false) -> CompiledRoute {
            CompiledRoute(config: RouteConfiguration(name: "r", match: .prefix("/v1"), upstream: "u", mode: mode,
                                                     onStoreError: failOpen ? .failOpen : .failClosed, counterWindow: window,
                                                     environment: environment, bindHeaders: bind, apps: apps),
                          upstream: upstream)
        }

        /// A request as the proxy core would hand it over, with evidence headers for `assertion`.
        func request(method: String = "POST", target: String = "/v1/pay?x=1", body: [UInt8] = Array("{\"a\":1}".utf8),
                     challenge: [UInt8], assertion: [UInt8]?, keyId: [UInt8]? = nil,
                     extra: [(String, String)] = []) throws -> HTTPRequest {
            var headers = try HTTPHeaders([("Host", "api.example")] + extra)
            try headers.add(name: "App-Attest-Key-Id", value: Base64.encode(keyId ?? device.keyId))
            try headers.add(name: "App-Attest-Challenge", value: Base64.encode(challenge))
            if let assertion { try headers.add(name: "App-Attest-Assertion", value: Base64.encode(assertion)) }
            let head = try HTTPRequestHead(method: HTTPMethod(method)!, target: target, headers: headers,
                                           framing: body.isEmpty ? .none : .contentLength(body.count))
            return HTTPRequest(head: head, body: body, connection: HTTPConnectionInfo(id: 1, remoteAddress: "127.0.0.1:1", localAddress: "127.0.0.1:2"))
        }

        /// Mints an assertion over the request that `request(...)` builds with the same inputs.
        func assertion(method: String = "POST", target: String = "/v1/pay?x=1", body: [UInt8] = Array("{\"a\":1}".utf8),
                       challenge: [UInt8], counter: UInt32? = nil, appId: String = AssertionEnforcerTests.appId,
                       bound: [(name: String, value: String)] = []) throws -> [UInt8] {
            try device.mintAssertion(appId: appId, challenge: challenge, method: method, target: target, body: body,
                                     boundFields: bound, options: AssertionOptions(counter: counter)).assertionObject
        }

        func evaluate(_ request: HTTPRequest, route: CompiledRoute) throws -> AssertionEnforcer.Decision {
            var headers = request.head.headers
            let evidence = family.stripAndExtract(&headers)
            return try AssertionEnforcerTests.wait { done in self.enforcer.evaluate(evidence, request: request, route: route, completion: done) }
        }

        func storedCounter() throws -> UInt32? {
            try AssertionEnforcerTests.wait { done in self.store.fetchKey(try! KeyID(self.device.keyId), completion: done) }.get()?.counter
        }
    }

    /// The fixtures' shared clock (tests run one at a time).
    final class NowBox: @unchecked Sendable {  // read from store/issuer callbacks; written only between evaluations
        static let shared = NowBox()
        var value: Int64 = 0
    }

    static func wait<T: Sendable>(_ body: (@escaping @Sendable (T) -> Void) throws -> Void) throws -> T {
        let box = ResultBox<T>()
        let done = DispatchSemaphore(value: 0)
        try body { value in box.value = value; done.signal() }
        guard done.wait(timeout: .now() + 10) == .success, let value = box.value else {
            throw SetupFailure("no completion within 10 s: the enforcer or the store never answered")
        }
        return value
    }

    final class ResultBox<T>: @unchecked Sendable {  // written once before the semaphore is signalled
        var value: T?
    }

    // MARK: - Tests

    func testValidAssertionIsAcceptedAndCommitted() throws {
        let f = try Fixture()
        let challenge = try f.challenge(.assert)
        let request = try f.request(challenge: challenge, assertion: try f.assertion(challenge: challenge))
        let decision = try f.evaluate(request, route: f.route())
        XCTAssertNil(decision.refusal)
        XCTAssertEqual(decision.report.verdict, .valid)
        XCTAssertEqual(decision.report.counter, 1)
        XCTAssertEqual(decision.report.environment, "development")
        XCTAssertEqual(try f.storedCounter(), 1)
        // The same request again: the challenge was consumed.
        let again = try f.evaluate(request, route: f.route())
        XCTAssertEqual(again.refusal?.code, "challenge_unknown")
        XCTAssertEqual(again.refusal?.action, .refreshChallenge)
        XCTAssertNotNil(again.refusal?.freshChallenge, "a challenge failure carries a fresh challenge")
    }

    func testMissingEvidence() throws {
        let f = try Fixture()
        var headers = try HTTPHeaders([("Host", "h")])
        let head = try HTTPRequestHead(method: .post, target: "/v1/pay", headers: headers)
        let request = HTTPRequest(head: head, connection: HTTPConnectionInfo(id: 1, remoteAddress: "a", localAddress: "b"))
        let evidence = f.family.stripAndExtract(&headers)
        let decision = try Self.wait { done in f.enforcer.evaluate(evidence, request: request, route: f.route(), completion: done) }
        XCTAssertEqual(decision.report.verdict, .missing)
        XCTAssertEqual(decision.refusal?.status, 401)
        XCTAssertEqual(decision.refusal?.code, "assertion_missing")
    }

    func testEveryPartOfTheRequestIsBound() throws {
        let f = try Fixture()
        let challenge = try f.challenge(.assert)
        let signed = try f.assertion(challenge: challenge)
        let changes: [(String, HTTPRequest)] = [
            ("body", try f.request(body: Array("{\"a\":2}".utf8), challenge: challenge, assertion: signed)),
            ("method", try f.request(method: "PUT", challenge: challenge, assertion: signed)),
            ("path", try f.request(target: "/v1/pay2?x=1", challenge: challenge, assertion: signed)),
            ("query", try f.request(target: "/v1/pay?x=2", challenge: challenge, assertion: signed)),
        ]
        for (what, request) in changes {
            let decision = try f.evaluate(request, route: f.route())
            XCTAssertEqual(decision.refusal?.code, "bad_signature", "changed \(what)")
            XCTAssertEqual(decision.report.verdict, .invalid)
        }
        XCTAssertEqual(try f.storedCounter(), 0, "nothing committed")
        // The challenge was not burnt by the failures.
        let decision = try f.evaluate(try f.request(challenge: challenge, assertion: signed), route: f.route())
        XCTAssertEqual(decision.report.verdict, .valid)
    }

    func testBoundHeaders() throws {
        let f = try Fixture()
        let route = f.route(bind: ["Authorization"])
        let challenge = try f.challenge(.assert)
        let signed = try f.assertion(challenge: challenge, bound: [("Authorization", "Bearer alice")])
        let bob = try f.evaluate(try f.request(challenge: challenge, assertion: signed, extra: [("authorization", "Bearer bob")]), route: route)
        XCTAssertEqual(bob.refusal?.code, "bad_signature")
        let twice = try f.evaluate(try f.request(challenge: challenge, assertion: signed,
                                                 extra: [("Authorization", "Bearer alice"), ("Authorization", "Bearer alice")]), route: route)
        XCTAssertEqual(twice.refusal?.code, "bound_header_duplicated")
        XCTAssertEqual(twice.refusal?.status, 400)
        let alice = try f.evaluate(try f.request(challenge: challenge, assertion: signed, extra: [("AUTHORIZATION", "Bearer alice")]), route: route)
        XCTAssertEqual(alice.report.verdict, .valid, "header lookup is case-insensitive; the configured spelling is signed")
        // `_` spellings reach CGI, WSGI, PHP and Rack backends as the bound field itself (probe: wsgiref
        // joined `X_User_Token: mallory` to the signed `X-User-Token`, or gave it alone): a copy.
        let tokenRoute = f.route(bind: ["X-User-Token"])
        let fresh = try f.challenge(.assert)
        let signedToken = try f.assertion(challenge: fresh, bound: [("X-User-Token", "alice")])
        for extra in [[("X-User-Token", "alice"), ("X_User_Token", "mallory")], [("x_user_token", "mallory")],
                      [("X-User-Token", "alice"), ("X-User_Token", "mallory")]] {
            let spelled = try f.evaluate(try f.request(challenge: fresh, assertion: signedToken, extra: extra), route: tokenRoute)
            XCTAssertEqual(spelled.refusal?.code, "bound_header_duplicated", "\(extra)")
        }
        let other = try f.evaluate(try f.request(challenge: fresh, assertion: signedToken,
                                                 extra: [("X-User-Token", "alice"), ("X-User-Tokens", "x"), ("X_User", "y")]), route: tokenRoute)
        XCTAssertEqual(other.report.verdict, .valid, "other names are not copies: \(String(describing: other.refusal))")
    }

    func testDecodingFailures() throws {
        let f = try Fixture()
        let challenge = try f.challenge(.assert)
        let signed = try f.assertion(challenge: challenge)
        let shortKey = try f.evaluate(try f.request(challenge: challenge, assertion: signed, keyId: [UInt8](repeating: 1, count: 31)), route: f.route())
        XCTAssertEqual(shortKey.refusal?.code, "key_id_invalid")
        XCTAssertEqual(shortKey.refusal?.status, 400)
        let shortChallenge = try f.evaluate(try f.request(challenge: [1, 2, 3], assertion: signed), route: f.route())
        XCTAssertEqual(shortChallenge.refusal?.code, "challenge_invalid")

        var headers = try HTTPHeaders([("App-Attest-Key-Id", Base64.encode(f.device.keyId)), ("App-Attest-Challenge", "!!notbase64!!"),
                                       ("App-Attest-Assertion", Base64.encode(signed))])
        let head = try HTTPRequestHead(method: .post, target: "/v1/pay", headers: headers)
        let evidence = f.family.stripAndExtract(&headers)
        let bad = try Self.wait { done in
            f.enforcer.evaluate(evidence, request: HTTPRequest(head: head, connection: HTTPConnectionInfo(id: 1, remoteAddress: "a", localAddress: "b")),
                                route: f.route(), completion: done)
        }
        XCTAssertEqual(bad.refusal?.code, "encoding_invalid")
        XCTAssertEqual(try f.storedCounter(), 0)
    }

    func testClientDataCopyMustMatch() throws {
        let f = try Fixture()
        let challenge = try f.challenge(.assert)
        let minted = try f.device.mintAssertion(appId: Self.appId, challenge: challenge, method: "POST", target: "/v1/pay?x=1",
                                                body: Array("{\"a\":1}".utf8))
        var tampered = minted.clientData
        tampered[tampered.count - 1] ^= 1
        let wrong = try f.evaluate(try f.request(challenge: challenge, assertion: minted.assertionObject,
                                                 extra: [("App-Attest-Client-Data", Base64.encode(tampered))]), route: f.route())
        XCTAssertEqual(wrong.refusal?.code, "client_data_mismatch")
        let right = try f.evaluate(try f.request(challenge: challenge, assertion: minted.assertionObject,
                                                 extra: [("App-Attest-Client-Data", Base64.encode(minted.clientData))]), route: f.route())
        XCTAssertEqual(right.report.verdict, .valid)
    }

    func testCounterPolicy() throws {
        let f = try Fixture()
        let strict = f.route()
        let c1 = try f.challenge(.assert), c2 = try f.challenge(.assert)
        let high = try f.assertion(challenge: c1, counter: 5)
        let low = try f.assertion(challenge: c2, counter: 4)
        XCTAssertEqual(try f.evaluate(try f.request(challenge: c1, assertion: high), route: strict).report.verdict, .valid)
        let replay = try f.evaluate(try f.request(challenge: c2, assertion: low), route: strict)
        XCTAssertEqual(replay.refusal?.code, "counter_replay")
        XCTAssertEqual(replay.refusal?.action, .deny)
        // With a window, the lower counter that was never seen passes once.
        XCTAssertEqual(try f.evaluate(try f.request(challenge: c2, assertion: low), route: f.route(window: 8)).report.verdict, .valid)
        XCTAssertEqual(try f.storedCounter(), 5)
    }

    func testChallengeBoundToKeyPurposeAndTime() throws {
        let f = try Fixture()
        // For the other purpose.
        let attestChallenge = try f.challenge(.attest)
        let wrongPurpose = try f.evaluate(try f.request(challenge: attestChallenge, assertion: try f.assertion(challenge: attestChallenge)), route: f.route())
        XCTAssertEqual(wrongPurpose.refusal?.code, "challenge_wrong_purpose")
        // Issued to another key.
        let other = try f.challenge(.assert, keyId: [UInt8](repeating: 7, count: 32))
        let otherKey = try f.evaluate(try f.request(challenge: other, assertion: try f.assertion(challenge: other)), route: f.route())
        XCTAssertEqual(otherKey.refusal?.code, "challenge_unknown")
        // Expired.
        let late = try f.challenge(.assert)
        NowBox.shared.value += 301_000
        let expired = try f.evaluate(try f.request(challenge: late, assertion: try f.assertion(challenge: late)), route: f.route())
        XCTAssertEqual(expired.refusal?.code, "challenge_expired")
        XCTAssertEqual(expired.refusal?.action, .refreshChallenge)
        XCTAssertNotNil(expired.refusal?.freshChallenge)
        // Monitor mode: same verdict, no fresh challenge (the client never sees the refusal).
        let monitored = try f.evaluate(try f.request(challenge: late, assertion: try f.assertion(challenge: late)), route: f.route(mode: .monitor))
        XCTAssertEqual(monitored.report.verdict, .invalid)
        XCTAssertNil(monitored.refusal?.freshChallenge)
    }

    func testUnknownKeyAnswersReattest() throws {
        let f = try Fixture()
        var stranger = try SoftwareDevice()
        let challenge = try f.challenge(.assert, keyId: stranger.keyId)
        let signed = try stranger.mintAssertion(appId: Self.appId, challenge: challenge, method: "POST", target: "/v1/pay?x=1",
                                                body: Array("{\"a\":1}".utf8)).assertionObject
        let decision = try f.evaluate(try f.request(challenge: challenge, assertion: signed, keyId: stranger.keyId), route: f.route())
        XCTAssertEqual(decision.refusal?.code, "key_unknown")
        XCTAssertEqual(decision.refusal?.action, .reattest)
        XCTAssertEqual(decision.refusal?.status, 401)
    }

    func testRoutePolicy() throws {
        let f = try Fixture(environment: .development)
        let challenge = try f.challenge(.assert)
        let signed = try f.assertion(challenge: challenge)
        let production = try f.evaluate(try f.request(challenge: challenge, assertion: signed), route: f.route(environment: .production))
        XCTAssertEqual(production.refusal?.code, "env_mismatch")
        XCTAssertEqual(production.refusal?.status, 403)
        let otherApp = try f.evaluate(try f.request(challenge: challenge, assertion: signed), route: f.route(apps: [AppID(Self.otherAppId)!]))
        XCTAssertEqual(otherApp.refusal?.code, "app_not_allowed")
        XCTAssertEqual(try f.storedCounter(), 0)
        XCTAssertEqual(try f.evaluate(try f.request(challenge: challenge, assertion: signed), route: f.route()).report.verdict, .valid)
    }

    func testAssertionForAnotherAppIsRefused() throws {
        let f = try Fixture()
        let challenge = try f.challenge(.assert)
        let signed = try f.assertion(challenge: challenge, appId: Self.otherAppId)
        let decision = try f.evaluate(try f.request(challenge: challenge, assertion: signed), route: f.route())
        XCTAssertEqual(decision.refusal?.code, "rp_id_mismatch")
        XCTAssertEqual(decision.refusal?.status, 401)
    }

    /// The key cache outlives a reload (the tables are rebuilt, the cache is handed on): a key whose
    /// app the reload removed is refused `app_not_allowed` at once, cached or not, and its challenge
    /// is not consumed.
    func testAKeyOfAnAppRemovedByAReloadIsRefusedFromTheCache() throws {
        let f = try Fixture()
        let first = try f.challenge(.assert)
        XCTAssertNil(try f.evaluate(try f.request(challenge: first, assertion: try f.assertion(challenge: first)), route: f.route()).refusal)
        XCTAssertNotNil(f.keys.get(try KeyID(f.device.keyId), shard: 0), "the key is cached")
        // The reloaded tables: the same cache, the app gone.
        let reloaded = AssertionEnforcer(store: f.store, keys: f.keys, apps: f.enforcer.apps.filter { $0.key != Self.appId },
                                         issuer: f.issuer, clock: f.enforcer.clock, family: f.family)
        let challenge = try f.challenge(.assert)
        let request = try f.request(challenge: challenge, assertion: try f.assertion(challenge: challenge, counter: 2))
        var headers = request.head.headers
        let evidence = f.family.stripAndExtract(&headers)
        let decision = try Self.wait { done in reloaded.evaluate(evidence, request: request, route: f.route(), completion: done) }
        XCTAssertEqual(decision.refusal?.code, "app_not_allowed")
        XCTAssertEqual(decision.refusal?.status, 403)
        XCTAssertEqual(try f.storedCounter(), 1, "nothing committed")
        // The challenge was not consumed: the original tables accept the same request.
        XCTAssertNil(try f.evaluate(request, route: f.route()).refusal)
    }

    /// A key revoked in the store (by an operator, another gateway) while this gateway caches it: the
    /// commit refuses it `key_revoked`, and the key leaves the cache, so the next challenge request
    /// asks the store (which refuses it) instead of being served from the cache.
    func testARevokedKeyLeavesTheCacheAtItsRefusedCommit() throws {
        let f = try Fixture()
        let keyId = try KeyID(f.device.keyId)
        let first = try f.challenge(.assert)
        XCTAssertNil(try f.evaluate(try f.request(challenge: first, assertion: try f.assertion(challenge: first)), route: f.route()).refusal)
        XCTAssertNotNil(f.keys.get(keyId, shard: 0))
        XCTAssertTrue(try Self.wait { done in f.store.revokeKey(keyId, completion: done) }.get())
        let challenge = try f.challenge(.assert)
        let decision = try f.evaluate(try f.request(challenge: challenge, assertion: try f.assertion(challenge: challenge, counter: 2)),
                                      route: f.route())
        XCTAssertEqual(decision.refusal?.code, "key_revoked")
        XCTAssertNil(f.keys.get(keyId, shard: 0), "dropped from the cache")
    }

    func testStoreOutageFailsClosedOrOpen() throws {
        let f = try Fixture()
        let challenge = try f.challenge(.assert)
        let request = try f.request(challenge: challenge, assertion: try f.assertion(challenge: challenge))
        let down = UnavailableStore()
        let enforcer = AssertionEnforcer(store: down, keys: KeyCache(), apps: f.enforcer.apps, issuer: f.issuer, clock: f.enforcer.clock,
                                         family: f.family)
        var headers = request.head.headers
        let evidence = f.family.stripAndExtract(&headers)
        let closed = try Self.wait { done in enforcer.evaluate(evidence, request: request, route: f.route(), completion: done) }
        XCTAssertEqual(closed.report.verdict, .unverified)
        XCTAssertEqual(closed.refusal?.status, 503)
        XCTAssertEqual(closed.refusal?.retryAfter, 1)
        XCTAssertEqual(closed.refusal?.action, .retry)
        let open = try Self.wait { done in enforcer.evaluate(evidence, request: request, route: f.route(failOpen: true), completion: done) }
        XCTAssertEqual(open.report.verdict, .unverified)
        XCTAssertNil(open.refusal, "fail_open forwards")
    }

    /// A store whose every call fails as unreachable (a dependency outage, for the unit test; the
    /// end-to-end tests stop a real redis-server).
    final class UnavailableStore: AttestStore {
        private let error = StoreUnavailable(.notConnected, detail: "test outage")
        func issueChallenge(_ challenge: Challenge, keyId: KeyID, purpose: ChallengePurpose, expiresAt: UnixMillis, now: UnixMillis,
                            completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) { completion(.failure(error)) }
        func registerKey(_ record: KeyRecord, challenge: Challenge, now: UnixMillis,
                         completion: @escaping @Sendable (Result<StoreOutcome<Void>, StoreUnavailable>) -> Void) { completion(.failure(error)) }
        func fetchKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<KeyRecord?, StoreUnavailable>) -> Void) { completion(.failure(error)) }
        func commitAssertion(keyId: KeyID, challenge: Challenge, counter: UInt32, window: Int, now: UnixMillis,
                             completion: @escaping @Sendable (Result<StoreOutcome<CommittedAssertion>, StoreUnavailable>) -> Void) {
            completion(.failure(error))
        }
        func revokeKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) { completion(.failure(error)) }
        func deleteKey(_ keyId: KeyID, completion: @escaping @Sendable (Result<Bool, StoreUnavailable>) -> Void) { completion(.failure(error)) }
        func ping(completion: @escaping @Sendable (Result<Void, StoreUnavailable>) -> Void) { completion(.failure(error)) }
        func close() {}
    }
}
