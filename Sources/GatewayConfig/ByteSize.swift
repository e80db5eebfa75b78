/// Sizes in the configuration (`max_body`, `limits.max_header_bytes`): a decimal integer of bytes,
/// optionally followed by a binary unit.
///
/// Accepted: `0`, `1048576`, `512B`, `64KiB` (x1024), `1MiB` (x1024²), `1GiB` (x1024³). Refused on
/// purpose, with a message that shows both readings: decimal or ambiguous units (`KB`, `MB`, `GB`, `k`,
/// `m`, `g`, as nginx uses them for 1024 and the SI for 1000), spaces, fractions, signs.
enum ByteSize {
    private static let units: [(String, Int)] = [("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40)]

    /// Bytes, or a message describing what is wrong with `text`.
    static func parse(_ text: String) -> Result<Int, ConfigSyntaxError> {
        let generic = "expected a size like 64KiB or 1MiB (or plain bytes), got \(ConfigText.quoted(text))"
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        let unit = String(text.dropFirst(digits.count))
        guard !digits.isEmpty, let number = ScalarSyntax.integer(String(digits)) else {
            return .failure(ConfigSyntaxError(generic))
        }
        if unit.isEmpty { return .success(number) }
        if let (_, factor) = units.first(where: { $0.0 == unit }) {
            let (bytes, overflow) = number.multipliedReportingOverflow(by: factor)
            if overflow { return .failure(ConfigSyntaxError("\(ConfigText.quoted(text)) is too large")) }
            return .success(bytes)
        }
        let decimal: [String: (String, Int)] = [
            "k": ("KiB", 1000), "kb": ("KiB", 1000), "m": ("MiB", 1_000_000), "mb": ("MiB", 1_000_000),
            "g": ("GiB", 1_000_000_000), "gb": ("GiB", 1_000_000_000), "t": ("TiB", 1_000_000_000_000), "tb": ("TiB", 1_000_000_000_000),
        ]
        if let (binary, factor) = decimal[unit.lowercased()] {
            let (si, overflow) = number.multipliedReportingOverflow(by: factor)
            let siText = overflow ? "" : " or \(si) (plain bytes)"
            return .failure(ConfigSyntaxError("ambiguous unit \(ConfigText.quoted(unit)) in \(ConfigText.quoted(text)): write \(number)\(binary)\(siText)"))
        }
        if let match = units.first(where: { $0.0.lowercased() == unit.lowercased() }) {
            return .failure(ConfigSyntaxError("\(generic); did you mean \(number)\(match.0)?"))
        }
        return .failure(ConfigSyntaxError(generic))
    }

    /// The shortest exact spelling: `1MiB`, `64KiB`, `1000` (no unit when not a whole multiple).
    static func format(_ bytes: Int) -> String {
        for (name, factor) in units.reversed() where factor > 1 && bytes != 0 && bytes % factor == 0 {
            return "\(bytes / factor)\(name)"
        }
        return "\(bytes)"
    }
}

/// A value that could not be read; `message` is ready for a `ConfigIssue`.
struct ConfigSyntaxError: Error, Sendable {
    /// What is wrong, and when possible what to write instead.
    var message: String
    init(_ message: String) { self.message = message }
}
