@testable import AppAttest
import Foundation
import GatewayTestSupport
import XCTest

/// Cross-implementation check: the independent Python verifier (../shared/tools/ref_verify.py --json)
/// and ours agree on every check both compute, for every vector and variant.
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
        for (path, doc) in zip(files, docs) {
            let vector = try VectorFixture(URL(fileURLWithPath: path))
            XCTAssertEqual(doc["id"] as? String, vector.id)
            let reference = (doc["results"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool }
            let ours = try RealVectorTests.checks(vector).checks
            compared += compare(reference, ours, vector.id)
            let refVariants = doc["variants"] as? [[String: Any]] ?? []
            for (variant, refVariant) in zip(vector.variants, refVariants) {
                XCTAssertEqual(refVariant["name"] as? String, variant.name)
                let refResults = (refVariant["results"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool }
                compared += compare(refResults, try RealVectorTests.checks(variant.vector).checks, "\(vector.id)/\(variant.name)")
            }
        }
        XCTAssertGreaterThan(compared, 1000)
    }

    private func compare(_ reference: [String: Bool], _ ours: [String: Bool], _ label: String) -> Int {
        var n = 0
        for (check, value) in reference {
            guard let mine = ours[check] else { continue }
            XCTAssertEqual(mine, value, "\(label): \(check) reference=\(value) ours=\(mine)")
            n += 1
        }
        return n
    }
}
