/// Durations in the configuration (`challenge_ttl`, every timeout): one or more `<integer><unit>`
/// components, units `h`, `m`, `s`, `ms`, largest first, each at most once.
///
/// Accepted: `300s`, `500ms`, `2m`, `1h`, `1m30s`, `0` (zero needs no unit). Refused: a bare number
/// other than 0 (seconds or milliseconds? write the unit), fractions (`1.5s`: write `1500ms`),
/// `d`/`us`/`ns`, spaces, signs. Precision is one millisecond.
enum DurationSyntax {
    private static let units: [(String, Int64)] = [("h", 3_600_000), ("m", 60_000), ("s", 1000), ("ms", 1)]
    /// Longest accepted duration: 1000 hours, so that no arithmetic on it can overflow.
    static let maximumMilliseconds: Int64 = 1000 * 3_600_000

    /// The duration, or a message describing what is wrong with `text`.
    static func parse(_ text: String) -> Result<Duration, ConfigSyntaxError> {
        let generic = "expected a duration like 300s, 500ms, 2m or 1h, got \(ConfigText.quoted(text))"
        if text == "0" { return .success(.zero) }
        if ScalarSyntax.integer(text) != nil {
            return .failure(ConfigSyntaxError("\(generic): add a unit (\(text)s or \(text)ms)"))
        }
        if text.contains(".") {
            return .failure(ConfigSyntaxError("\(generic): fractions are not accepted, use a smaller unit (e.g. 1500ms)"))
        }
        var rest = Substring(text)
        var total: Int64 = 0
        var lastUnitIndex = -1
        guard !rest.isEmpty else { return .failure(ConfigSyntaxError(generic)) }
        while !rest.isEmpty {
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            guard !digits.isEmpty, digits.count <= 10, let n = Int64(digits) else { return .failure(ConfigSyntaxError(generic)) }
            rest = rest.dropFirst(digits.count)
            let unitText = rest.prefix { $0.isASCII && $0.isLetter }
            rest = rest.dropFirst(unitText.count)
            guard let unitIndex = units.firstIndex(where: { $0.0 == unitText }) else {
                if unitText.isEmpty { return .failure(ConfigSyntaxError(generic)) }
                return .failure(ConfigSyntaxError("\(generic): unknown unit \(ConfigText.quoted(String(unitText))) (use h, m, s or ms)"))
            }
            guard unitIndex > lastUnitIndex else {
                return .failure(ConfigSyntaxError("\(generic): write the units largest first, each once (e.g. 1m30s)"))
            }
            lastUnitIndex = unitIndex
            total += n * units[unitIndex].1  // n < 10^10 and factor <= 3.6e6: no overflow
            if total > maximumMilliseconds {
                return .failure(ConfigSyntaxError("\(ConfigText.quoted(text)) is longer than 1000h"))
            }
        }
        return .success(.milliseconds(total))
    }

    /// Whole milliseconds of `duration` (truncated).
    static func milliseconds(_ duration: Duration) -> Int64 {
        let c = duration.components
        return c.seconds &* 1000 &+ c.attoseconds / 1_000_000_000_000_000
    }

    /// The shortest exact spelling: `5m`, `300ms`, `1h`, `0`.
    static func format(_ duration: Duration) -> String {
        let ms = milliseconds(duration)
        if ms == 0 { return "0" }
        for (name, factor) in units where ms % factor == 0 {
            return "\(ms / factor)\(name)"
        }
        return "\(ms)ms"
    }
}
