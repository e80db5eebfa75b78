import AppAttest
import Foundation

/// One test vector file of shared/vectors (schema: shared/vectors/README.md), with its variants.
struct TestVector {
    /// The JSON object of the file (without `variants`).
    let fields: [String: Any]
    /// File path, for messages.
    let path: String

    var kind: String { fields["kind"] as? String ?? "" }
    var id: String { fields["id"] as? String ?? (path as NSString).lastPathComponent }
    var expected: [String: Bool] { (fields["expected"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool } }
    let variants: [(name: String, override: [String: Any], expected: [String: Bool])]

    /// Loads `path`.
    init(path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] else {
            throw VectorError("\(path): not a JSON object")
        }
        self.path = path
        var fields = object
        let rawVariants = fields.removeValue(forKey: "variants") as? [[String: Any]] ?? []
        self.fields = fields
        self.variants = rawVariants.map { v in
            (v["name"] as? String ?? "?", v["override"] as? [String: Any] ?? [:],
             (v["expected"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Bool })
        }
    }

    private init(fields: [String: Any], path: String) {
        self.fields = fields
        self.path = path
        self.variants = []
    }

    /// The vector with `override` applied (a variant).
    func applying(_ override: [String: Any]) -> TestVector {
        TestVector(fields: fields.merging(override) { $1 }, path: path)
    }

    func string(_ key: String) -> String? { fields[key] as? String }

    /// Base64 (standard or URL-safe) field decoded, nil when absent or null.
    func bytes(_ key: String) throws -> [UInt8]? {
        guard let text = fields[key] as? String else { return nil }
        guard let bytes = Base64.decode(text) else { throw VectorError("\(id): field \(key) is not base64") }
        return bytes
    }

    func integer(_ key: String) -> Int64? { (fields[key] as? NSNumber)?.int64Value }
}

/// A problem with a vector file itself (not a verification result).
struct VectorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
