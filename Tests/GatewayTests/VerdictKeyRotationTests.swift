@testable import Gateway
import XCTest

/// The rotation schedule of generated verdict-signing keys (`VerdictKeyRotation`), driven by the
/// times passed in: no clock, no sleeps.
final class VerdictKeyRotationTests: XCTestCase {
    /// P = 1000 s, L = 100 s, T = 60 s, S = 60 s.
    let policy = VerdictKeyRotation.Policy(rotation: 1_000_000, publishAhead: 100_000, tokenLifetime: 60_000, skew: 60_000)
    private var made = 0

    private func makeKey() -> (kid: String, material: [UInt8]) {
        made += 1
        return ("k\(made)", [UInt8(made)])
    }

    func testAnEmptySetGetsAKeyThatSignsAtOnce() {
        var rotation = VerdictKeyRotation()
        XCTAssertNil(rotation.signingKey(at: 0))
        let change = rotation.advance(now: 5_000, policy: policy, makeKey: makeKey)
        XCTAssertEqual(change.added, "k1")
        XCTAssertEqual(rotation.signingKey(at: 5_000)?.kid, "k1")
        XCTAssertNil(rotation.signingKey(at: 4_999), "a key never signs before it exists")
        // Idempotent.
        XCTAssertTrue(rotation.advance(now: 5_000, policy: policy, makeKey: makeKey).isEmpty)
        XCTAssertEqual(rotation.entries.count, 1)
    }

    func testTheNextKeyIsPublishedAheadThenSignsThenTheOldOneLeavesAfterItsTokensExpired() {
        var rotation = VerdictKeyRotation()
        rotation.advance(now: 0, policy: policy, makeKey: makeKey)
        // Just before P - L: nothing to do.
        XCTAssertTrue(rotation.advance(now: 899_999, policy: policy, makeKey: makeKey).isEmpty)
        XCTAssertEqual(rotation.nextChange(policy: policy), 900_000)
        // At P - L: k2 is published, signing from P.
        XCTAssertEqual(rotation.advance(now: 900_000, policy: policy, makeKey: makeKey).added, "k2")
        XCTAssertEqual(rotation.entries.map(\.kid), ["k1", "k2"])
        XCTAssertEqual(rotation.entries[1].activatesAt, 1_000_000)
        XCTAssertEqual(rotation.signingKey(at: 999_999)?.kid, "k1", "published, not yet signing")
        XCTAssertEqual(rotation.signingKey(at: 1_000_000)?.kid, "k2")
        // A pending key is not followed by another one.
        XCTAssertTrue(rotation.advance(now: 950_000, policy: policy, makeKey: makeKey).isEmpty)
        // k1 stays until k2's activation + T + S.
        XCTAssertTrue(rotation.advance(now: 1_119_999, policy: policy, makeKey: makeKey).isEmpty)
        XCTAssertEqual(rotation.nextChange(policy: policy), 1_120_000)
        XCTAssertEqual(rotation.advance(now: 1_120_000, policy: policy, makeKey: makeKey).removed, ["k1"])
        XCTAssertEqual(rotation.entries.map(\.kid), ["k2"])
    }

    func testAKeyIsAlwaysPublishedAtLeastPublishAheadBeforeItSigns() {
        var rotation = VerdictKeyRotation()
        rotation.advance(now: 0, policy: policy, makeKey: makeKey)
        // Nobody looked for a long time (the fleet was down): the next key still waits L.
        let late: Int64 = 5_000_000
        XCTAssertEqual(rotation.advance(now: late, policy: policy, makeKey: makeKey).added, "k2")
        XCTAssertEqual(rotation.entries[1].activatesAt, late + policy.publishAhead)
        XCTAssertEqual(rotation.signingKey(at: late + policy.publishAhead - 1)?.kid, "k1")
        // Over a long run with irregular looks: every key but the first signs only once it has been
        // in the set for L.
        var run = VerdictKeyRotation()
        var now: Int64 = 0
        var firstSeen: [String: Int64] = [:]
        run.advance(now: now, policy: policy, makeKey: makeKey)
        let firstKid = run.entries[0].kid
        for step in 0..<500 {
            run.advance(now: now, policy: policy, makeKey: makeKey)
            for entry in run.entries where firstSeen[entry.kid] == nil { firstSeen[entry.kid] = now }
            guard let signing = run.signingKey(at: now) else { return XCTFail("no signing key at \(now)") }
            if signing.kid != firstKid, let seen = firstSeen[signing.kid] {
                XCTAssertGreaterThanOrEqual(now - seen, policy.publishAhead, "\(signing.kid) signs at \(now), published at \(seen)")
            }
            XCTAssertLessThanOrEqual(run.entries.count, 3)
            now += Int64((step * 7919) % 97_000 + 1_000)
        }
        XCTAssertGreaterThan(made, 10, "the run rotated")
    }

    func testTheDocumentRoundTripsAndAnythingElseIsRefused() {
        var rotation = VerdictKeyRotation()
        rotation.advance(now: 0, policy: policy, makeKey: makeKey)
        rotation.advance(now: 900_000, policy: policy, makeKey: makeKey)
        XCTAssertEqual(VerdictKeyRotation(decoding: rotation.encoded()), rotation)
        XCTAssertNil(VerdictKeyRotation(decoding: Array("verdict-keys v2\n".utf8)))
        XCTAssertNil(VerdictKeyRotation(decoding: Array("verdict-keys v1\nk1 0 zero AQ==\n".utf8)))
        XCTAssertNil(VerdictKeyRotation(decoding: Array("{\"keys\":[]}".utf8)))
        XCTAssertEqual(VerdictKeyRotation(decoding: Array("verdict-keys v1\n".utf8))?.entries.count, 0)
    }
}
