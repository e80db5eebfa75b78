import Foundation
@testable import GatewayIO
import GatewayTestSupport
import XCTest

/// `TLSCertificateCheck`, the check-config side: every problem it reports, each with a file that
/// has it and one that does not.
final class TLSCertificateCheckTests: XCTestCase {
    let pki = TestPKI.shared
    let now = Int64(Date().timeIntervalSince1970)

    func kinds(_ chain: String, _ key: String, now: Int64? = nil) -> [TLSCertificateProblem.Kind] {
        TLSCertificateCheck.problems(chainPath: chain, keyPath: key, now: now ?? self.now).map(\.kind)
    }

    func testAGoodCertificateHasNoProblem() {
        XCTAssertEqual(TLSCertificateCheck.problems(chainPath: pki.a.chainPath, keyPath: pki.a.keyPath, now: now), [])
        XCTAssertEqual(kinds(pki.b.chainPath, pki.b.keyPath), [])
        XCTAssertEqual(kinds(pki.address.chainPath, pki.address.keyPath), [], "an IP subjectAltName counts")
    }

    func testUnreadableFiles() {
        let missing = pki.directory + "/missing.pem"
        let problems = TLSCertificateCheck.problems(chainPath: missing, keyPath: missing + ".key", now: now)
        XCTAssertEqual(problems.map(\.kind), [.unreadableFile, .unreadableFile])
        XCTAssertEqual(problems.map(\.severity), [.error, .error])
        XCTAssertEqual(problems[0].path, missing)
        XCTAssertEqual(problems[0].description, "\(missing): cannot read: No such file or directory")
        XCTAssertEqual(problems[1].path, missing + ".key")
        XCTAssertEqual(kinds(pki.a.chainPath, missing), [.unreadableFile], "the chain itself is fine")
    }

    func testNotPEMAndNoCertificate() throws {
        let garbage = try pki.file("check-garbage.txt", "hello\n")
        XCTAssertEqual(kinds(garbage, pki.a.keyPath), [.notPEM])
        XCTAssertEqual(kinds(pki.a.chainPath, garbage), [.notPEM])
        XCTAssertEqual(kinds(pki.a.keyPath, pki.a.keyPath), [.noCertificate])
        let problem = TLSCertificateCheck.problems(chainPath: pki.a.keyPath, keyPath: pki.a.keyPath, now: now)[0]
        XCTAssertEqual(problem.message, "no CERTIFICATE block")
        XCTAssertEqual(problem.severity, .error)
        XCTAssertEqual(kinds(pki.a.chainPath, pki.a.chainPath), [.invalidKey], "a chain file is no key")
    }

    func testKeyMismatch() {
        let problems = TLSCertificateCheck.problems(chainPath: pki.a.chainPath, keyPath: pki.b.keyPath, now: now)
        XCTAssertEqual(problems.map(\.kind), [.keyMismatch])
        XCTAssertEqual(problems[0].severity, .error)
        XCTAssertEqual(problems[0].path, pki.b.keyPath)
        XCTAssertTrue(problems[0].message.contains("does not match the leaf certificate of \(pki.a.chainPath)"), problems[0].message)
        XCTAssertEqual(kinds(pki.a.chainPath, pki.a.keyPath), [])
    }

    func testUnsupportedKey() throws {
        let leaf = try pki.leaf("check-p384", names: ["p384.check.test"], keyType: .p384)
        let pair = try pki.certificate(leaf)
        let problems = TLSCertificateCheck.problems(chainPath: pair.chainPath, keyPath: pair.keyPath, now: now)
        XCTAssertEqual(problems.map(\.kind), [.unsupportedKey])
        XCTAssertTrue(problems[0].message.contains("secp384r1"), problems[0].message)
    }

    func testChainOutOfOrder() throws {
        let leaf = try pki.leaf("check-order", names: ["order.check.test"])
        let reversed = try pki.chain("check-reversed", [pki.intermediate, leaf])
        let problems = TLSCertificateCheck.problems(chainPath: reversed, keyPath: leaf.key, now: now)
        XCTAssertTrue(problems.map(\.kind).contains(.chainOrder), "\(problems)")
        XCTAssertTrue(problems.map(\.kind).contains(.keyMismatch), "the leaf must come first: \(problems)")
        let skipping = try pki.chain("check-skipping", [leaf, pki.root])
        let skipped = TLSCertificateCheck.problems(chainPath: skipping, keyPath: leaf.key, now: now)
        XCTAssertEqual(skipped.map(\.kind), [.chainOrder])
        XCTAssertTrue(skipped[0].message.contains("certificate 1 (CN=order.check.test) is issued by CN=Test Intermediate"), skipped[0].message)
        let full = try pki.chain("check-full", [leaf, pki.intermediate, pki.root])
        XCTAssertEqual(kinds(full, leaf.key), [], "leaf, intermediate, root is in order")
        let leafOnly = try pki.chain("check-leaf-only", [leaf])
        XCTAssertEqual(kinds(leafOnly, leaf.key), [], "a lone leaf has no order to break")
    }

    func testExpiredAndNotYetValid() throws {
        // Made with `openssl ca -startdate/-enddate`: really expired, really in the future.
        let expired = try pki.leaf("check-expired", names: ["expired.check.test"], start: "20200101000000Z", end: "20210101000000Z")
        let problems = TLSCertificateCheck.problems(chainPath: try pki.certificate(expired).chainPath, keyPath: expired.key, now: now)
        XCTAssertEqual(problems.map(\.kind), [.expired])
        XCTAssertEqual(problems[0].severity, .error)
        XCTAssertEqual(problems[0].message, "certificate 1 (CN=expired.check.test) expired on 2021-01-01 00:00:00 UTC")

        let future = try pki.leaf("check-future", names: ["future.check.test"], start: "20990101000000Z", end: "20991231000000Z")
        let futureProblems = TLSCertificateCheck.problems(chainPath: try pki.certificate(future).chainPath, keyPath: future.key, now: now)
        XCTAssertEqual(futureProblems.map(\.kind), [.notYetValid])
        XCTAssertEqual(futureProblems[0].message, "certificate 1 (CN=future.check.test) is not valid before 2099-01-01 00:00:00 UTC")

        // The same files at a time inside their validity: no problem.
        let expiredAlone = try pki.chain("check-expired-alone", [expired])
        XCTAssertEqual(kinds(expiredAlone, expired.key, now: 1_590_000_000), [])  // 2020-05-20
        XCTAssertEqual(kinds(try pki.certificate(expired).chainPath, expired.key, now: 1_590_000_000), [.notYetValid],
                       "the intermediate was made yesterday")
        // An intermediate's dates count too.
        let intermediateLater = now + 20 * 365 * 86_400
        XCTAssertTrue(kinds(pki.a.chainPath, pki.a.keyPath, now: intermediateLater).filter { $0 == .expired }.count == 2)
    }

    func testExpiresWithin30DaysIsAWarningWithTheDate() throws {
        let soon = try pki.leaf("check-soon", names: ["soon.check.test"], days: 10)
        let problems = TLSCertificateCheck.problems(chainPath: try pki.certificate(soon).chainPath, keyPath: soon.key, now: now)
        XCTAssertEqual(problems.map(\.kind), [.expiresSoon])
        XCTAssertEqual(problems[0].severity, .warning)
        XCTAssertTrue(problems[0].message.contains("expires on 20"), problems[0].message)
        XCTAssertTrue(problems[0].message.contains("(in 9 days)") || problems[0].message.contains("(in 10 days)"), problems[0].message)
        let later = try pki.leaf("check-later", names: ["later.check.test"], days: 31)
        XCTAssertEqual(kinds(try pki.certificate(later).chainPath, later.key), [], "31 days left: no warning")
    }

    func testLeafWithoutSubjectAltNameIsAWarning() throws {
        let bare = try pki.leaf("check-no-san", names: ["nosan.check.test"], sanNames: false)
        let problems = TLSCertificateCheck.problems(chainPath: try pki.certificate(bare).chainPath, keyPath: bare.key, now: now)
        XCTAssertEqual(problems.map(\.kind), [.noSubjectAltName])
        XCTAssertEqual(problems[0].severity, .warning)
        XCTAssertEqual(kinds(pki.wildcard.chainPath, pki.wildcard.keyPath), [], "a wildcard DNS name counts")
    }
}
