import AppAttest

/// The stored form of a `VerdictKeyRotation`, the document a fleet shares in the store:
///
///     verdict-keys v1
///     <kid> <publishedAt ms> <activatesAt ms> <PKCS#8 DER, standard base64>
///     ...
///
/// One line per key, in activation order, `\n` separated. Plain text rather than JSON: it is read
/// by a gateway only when the set changes, and this keeps a JSON reader out of the gateway.
extension VerdictKeyRotation {
    private static let magic = "verdict-keys v1"

    /// The document's bytes.
    func encoded() -> [UInt8] {
        var text = VerdictKeyRotation.magic + "\n"
        for entry in entries {
            text += "\(entry.kid) \(entry.publishedAt) \(entry.activatesAt) \(Base64.encode(entry.material))\n"
        }
        return Array(text.utf8)
    }

    /// Parses a document written by `encoded()`; nil for anything else (the caller reports it).
    init?(decoding bytes: [UInt8]) {
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
        guard lines.first == Substring(VerdictKeyRotation.magic) else { return nil }
        var entries: [Entry] = []
        for line in lines.dropFirst() {
            let parts = line.split(separator: " ")
            guard parts.count == 4, !parts[0].isEmpty, parts[0].utf8.count <= 64,
                  let published = Int64(parts[1]), let activates = Int64(parts[2]),
                  let material = Base64.decode(String(parts[3])), !material.isEmpty else { return nil }
            entries.append(Entry(kid: String(parts[0]), material: material, publishedAt: published, activatesAt: activates))
        }
        self.init(entries: entries)
    }
}
