import GatewayRules
import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest

/// Session resumption: tickets (RFC 5077, RFC 8446 section 4.6.1) with rotating keys, the server's
/// session-ID cache, the client's per-name session cache.
final class TLSResumptionTests: XCTestCase {
    let pki = TestPKI.shared

    func settings(tickets: Bool = true, rotation: Int = 3_600, timeout: Int = 7_200, cache: Int = 20_480) -> TLSServerSettings {
        TLSServerSettings(certificates: [.init(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath)], sessionCacheSize: cache,
                          sessionTimeoutSeconds: timeout, sessionTickets: tickets, ticketKeyRotationSeconds: rotation)
    }

    func client(maxVersion: TLSVersion = .tls13, tickets: Bool = true, reuse: Bool = true) throws -> TLSClientContext {
        try TLSClientContext(settings: TLSClientSettings(caPath: pki.root.certificate, maxVersion: maxVersion,
                                                         sessionReuse: reuse, sessionTickets: tickets))
    }

    /// One connection: handshake, a message each way (delivers TLS 1.3 tickets); whether it resumed.
    func connect(_ server: TLSServerContext, _ client: TLSClientContext, file: StaticString = #filePath, line: UInt = #line) throws -> Bool {
        let pair = try TLSPair(server: server, client: client, serverName: "a.test")
        pair.handshakeSucceeds(file: file, line: line)
        pair.ping(file: file, line: line)
        XCTAssertEqual(pair.server.sessionReused, pair.client.sessionReused, file: file, line: line)
        return pair.server.sessionReused
    }

    func testTLS13TicketResumes() throws {
        let server = try TLSServerContext(settings: settings())
        let client = try client()
        XCTAssertFalse(try connect(server, client))
        XCTAssertEqual(client.cachedSessionCount, 1)
        XCTAssertTrue(try connect(server, client))
        XCTAssertTrue(try connect(server, client), "the resumed connection left a fresh ticket")
        XCTAssertEqual(server.ticketKeys.count, 1)
    }

    func testTLS12TicketResumes() throws {
        let server = try TLSServerContext(settings: settings(cache: 0))
        let client = try client(maxVersion: .tls12)
        XCTAssertFalse(try connect(server, client))
        XCTAssertTrue(try connect(server, client), "by ticket: the server's cache is off")
        XCTAssertTrue(try connect(server, client), "a TLS 1.2 session is offered again")
    }

    func testTLS12SessionCacheResumesWithoutTickets() throws {
        let server = try TLSServerContext(settings: settings(tickets: false))
        let client = try client(maxVersion: .tls12, tickets: false)
        XCTAssertFalse(try connect(server, client))
        XCTAssertTrue(try connect(server, client), "by session ID from the server's cache")
        XCTAssertEqual(server.ticketKeys.count, 0, "no ticket was made")
    }

    func testNoResumptionWhenTheServerKeepsNothing() throws {
        let server = try TLSServerContext(settings: settings(tickets: false, cache: 0))
        let client = try client(maxVersion: .tls12)
        XCTAssertFalse(try connect(server, client))
        XCTAssertFalse(try connect(server, client))
    }

    func testNoResumptionWhenTheClientKeepsNothing() throws {
        let server = try TLSServerContext(settings: settings())
        let client = try client(reuse: false)
        XCTAssertFalse(try connect(server, client))
        XCTAssertEqual(client.cachedSessionCount, 0)
        XCTAssertFalse(try connect(server, client))

        let keeping = try self.client()
        XCTAssertFalse(try connect(server, keeping))
        keeping.forgetSessions()
        XCTAssertEqual(keeping.cachedSessionCount, 0)
        XCTAssertFalse(try connect(server, keeping), "forgotten")
        XCTAssertTrue(try connect(server, keeping))
    }

    func testATicketFromThePreviousKeyStillResumesAndTheKeyRotates() throws {
        let clock = ManualClock()
        let server = try TLSServerContext(settings: settings(rotation: 3_600, timeout: 7_200), clock: clock.function)
        let client = try client()
        XCTAssertFalse(try connect(server, client))
        XCTAssertEqual(server.ticketKeys.count, 1)
        clock.advance(seconds: 3_601)  // the first key stops encrypting, still decrypts
        XCTAssertTrue(try connect(server, client))
        XCTAssertEqual(server.ticketKeys.count, 2, "a new key encrypted the new tickets")
        XCTAssertTrue(try connect(server, client), "tickets under the new key resume")
    }

    func testATicketFromAnExpiredKeyIsNotReusedButTheHandshakeSucceeds() throws {
        let clock = ManualClock()
        let server = try TLSServerContext(settings: settings(rotation: 3_600, timeout: 7_200), clock: clock.function)
        let client = try client()
        XCTAssertFalse(try connect(server, client))
        clock.advance(seconds: 3_600 + 7_200)  // past encrypt + decrypt window of the first key
        XCTAssertFalse(try connect(server, client), "the old ticket is ignored: full handshake")
        XCTAssertEqual(server.ticketKeys.count, 1, "the expired key is gone, a new one made")
        XCTAssertTrue(try connect(server, client), "the new ticket resumes")
    }

    func testTicketsSurviveAReload() throws {
        let server = try TLSServerContext(settings: settings())
        let client = try client()
        XCTAssertFalse(try connect(server, client))
        try server.reload(settings())
        XCTAssertTrue(try connect(server, client), "the ticket keys belong to the context, not the generation")
    }

    func testASessionCacheDoesNotSurviveAReload() throws {
        let server = try TLSServerContext(settings: settings(tickets: false))
        let client = try client(maxVersion: .tls12, tickets: false)
        XCTAssertFalse(try connect(server, client))
        try server.reload(settings(tickets: false))
        XCTAssertFalse(try connect(server, client), "a new generation starts an empty cache")
        XCTAssertTrue(try connect(server, client))
    }

    func testTicketKeyScheduleDirectly() throws {
        let clock = ManualClock()
        let keys = TLSTicketKeys(rotationSeconds: 10, retentionSeconds: 20, clock: clock.function)
        let cipher = EVPContexts()
        var name = [UInt8](repeating: 0, count: 16)
        var iv = [UInt8](repeating: 0, count: 16)
        XCTAssertEqual(keys.callback(name: &name, iv: &iv, cipher: cipher.cipher, mac: cipher.mac, encrypt: true), 1)
        let first = name
        XCTAssertEqual(keys.callback(name: &name, iv: &iv, cipher: cipher.cipher, mac: cipher.mac, encrypt: false), 1, "current key")
        XCTAssertEqual(keys.callback(name: &name, iv: &iv, cipher: cipher.cipher, mac: cipher.mac, encrypt: false, alwaysRenew: true), 2,
                       "TLS 1.3: always renew")
        clock.advance(seconds: 10)
        XCTAssertEqual(keys.callback(name: &name, iv: &iv, cipher: cipher.cipher, mac: cipher.mac, encrypt: false), 2, "old key: renew")
        XCTAssertEqual(keys.callback(name: &name, iv: &iv, cipher: cipher.cipher, mac: cipher.mac, encrypt: true), 1)
        XCTAssertNotEqual(name, first, "rotated")
        XCTAssertEqual(keys.count, 2)
        clock.advance(seconds: 20)
        name = first
        XCTAssertEqual(keys.callback(name: &name, iv: &iv, cipher: cipher.cipher, mac: cipher.mac, encrypt: false), 0, "expired")
        XCTAssertEqual(keys.count, 1)
        var unknown = [UInt8](repeating: 7, count: 16)
        XCTAssertEqual(keys.callback(name: &unknown, iv: &iv, cipher: cipher.cipher, mac: cipher.mac, encrypt: false), 0, "unknown")
    }
}
