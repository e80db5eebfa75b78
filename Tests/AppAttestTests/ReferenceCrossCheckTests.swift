@testable import AppAttest
import Foundation
import GatewayTestSupport
import XCTest

/// Cross-implementation check: the independent Python verifier (../shared/tools/ref_verify.py --json)
/// and ours agree on every check, for every vector and variant, and on the decision: ours accepts
/// exactly when every decisive check of the reference passes, and a rejection's reason is explained by
/// a check the reference failed (`VectorDecision`). A check name either side does not know, or a
/// different number of variants, fails the test.
final class ReferenceCrossCheckTests: XCTestCase {
    func testAgreesWithReferenceVerifier() throws {
        guard let tools = SharedFixtures.toolsDirectory, let vectorsDir = SharedFixtures.vectorsDirectory else {
            throw XCTSkip(SharedFixtures.absentMessage)
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: vectorsDir.path).filter { $0.hasSuffix(".json") }.sorted()
            .map { vectorsDir.appendingPathComponent($0).path }
        // ref_verify.py --json prints one indented JSON document per file; split them into an array.
        let glue = """
        import json, subprocess, sys
        out = subprocess.run([sys.executable, sys.argv[1], "--json"] + sys.argv[2:], capture_output=True, text=True).stdout
        dec, i, docs = json.JSONDecoder(), 0, []
        while i < len(out):
            while i < len(out) and out[i].isspace(): i += 1
            if i >= len(out): break
            doc, i = dec.raw_decode(out, i)
            docs.append({"id": doc["id"], "results": doc["results"], "variants": [{"name": v["name"], "results": v["results"]} for v in doc["variants"]]})
        print(json.dumps(docs))
        """
        let run = try ChildProcess.run("python3", ["-c", glue, tools.appendingPathComponent("ref_verify.py").path] + files)
        XCTAssertEqual(run.status, 0, run.output)
        let docs = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [[String: Any]], run.output)
        XCTAssertEqual(docs.count, files.count)
        var compared = 0
        var decisions = 0
        for (path, doc) in zip(files, docs) {
            let vector = try VectorFixture(URL(fileURLWithPath: path))
            XCTAssertEqual(doc["id"] as? String, vector.id)
            let reference = (doc["results"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool }
            let ours = try RealVectorTests.checks(vector)
            compared += compare(reference, ours, kind: vector.kind, vector.id)
            decisions += 1
            let refVariants = doc["variants"] as? [[String: Any]] ?? []
            XCTAssertEqual(refVariants.count, vector.variants.count, "\(vector.id): variants, reference vs ours")
            XCTAssertEqual(refVariants.map { $0["name"] as? String ?? "?" }, vector.variants.map(\.name), vector.id)
            for (variant, refVariant) in zip(vector.variants, refVariants) {
                let refResults = (refVariant["results"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool }
                compared += compare(refResults, try RealVectorTests.checks(variant.vector), kind: vector.kind, "\(vector.id)/\(variant.name)")
                decisions += 1
            }
        }
        XCTAssertGreaterThan(compared, 1000)
        XCTAssertEqual(decisions, 508, "82 files and 426 variants, each decided")
    }

    /// Compares every check of the reference with ours (a name we do not compute fails), then the
    /// decision. Returns how many checks were compared.
    private func compare(_ reference: [String: Bool], _ ours: (accepted: Bool, reason: ReasonCode?, checks: [String: Bool]),
                         kind: String, _ label: String) -> Int {
        XCTAssertFalse(reference.isEmpty, "\(label): the reference computed no check")
        VectorDecision.assertKnown(reference.keys, kind: kind, "\(label) (reference)")
        VectorDecision.assertKnown(ours.checks.keys, kind: kind, "\(label) (ours)")
        var n = 0
        for (check, value) in reference {
            guard let mine = ours.checks[check] else {
                XCTFail("\(label): the reference computes \(check), we do not")
                continue
            }
            XCTAssertEqual(mine, value, "\(label): \(check) reference=\(value) ours=\(mine)")
            n += 1
        }
        VectorDecision.assertDecision(accepted: ours.accepted, reason: ours.reason, verdicts: reference, kind: kind,
                                      "\(label) (decision against the reference's checks)")
        return n
    }
}
