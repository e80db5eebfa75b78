import AppAttest
import Foundation
import GatewayTestSupport
import XCTest

/// One JSON vector of ../shared/vectors, read at test time.
struct VectorFixture {
    let url: URL
    let fields: [String: Any]
    var id: String { fields["id"] as? String ?? url.lastPathComponent }
    var kind: String { fields["kind"] as? String ?? "" }
    var expected: [String: Bool] { (fields["expected"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool } }
    var variants: [(name: String, vector: VectorFixture, expected: [String: Bool])] {
        (fields["variants"] as? [[String: Any]] ?? []).map { v in
            var merged = fields
            merged.removeValue(forKey: "variants")
            for (k, value) in v["override"] as? [String: Any] ?? [:] { merged[k] = value }
            return (v["name"] as? String ?? "?", VectorFixture(url: url, fields: merged),
                    (v["expected"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool })
        }
    }

    init(_ url: URL) throws {
        self.url = url
        guard let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any] else {
            throw SetupFailure("not a JSON object: \(url.path)")
        }
        fields = object
    }

    init(url: URL, fields: [String: Any]) {
        self.url = url
        self.fields = fields
    }

    func string(_ key: String) -> String? { fields[key] as? String }
    func bytes(_ key: String) throws -> [UInt8]? {
        guard let text = fields[key] as? String else { return nil }
        return try XCTUnwrap(Base64.decode(text), "\(id).\(key) is not base64")
    }
    func integer(_ key: String) -> Int64? { (fields[key] as? NSNumber)?.int64Value }

    /// All vectors of a kind, sorted by file name.
    static func all(kind: String) throws -> [VectorFixture] {
        guard let dir = SharedFixtures.vectorsDirectory else { throw XCTSkip(SharedFixtures.absentMessage) }
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasPrefix(kind + "-") && $0.hasSuffix(".json") }.sorted()
        return try names.map { try VectorFixture(dir.appendingPathComponent($0)) }
    }
}
