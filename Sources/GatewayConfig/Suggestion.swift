/// "Did you mean ...?" for unknown keys, enum values and names.
enum Suggestion {
    /// The candidate closest to `word`: one that differs only in case, `-`/`_` or camelCase
    /// (`maxBody`, `max-body`, `MAX_BODY` -> `max_body`), else the nearest by edit distance when close
    /// enough (1 edit up to 4 characters, 2 up to 9, 3 beyond), else one sharing its start (`prod` ->
    /// `production`). Nil when nothing is close.
    static func closest(to word: String, among candidates: [String]) -> String? {
        let folded = fold(word)
        if let same = candidates.first(where: { fold($0) == folded }) { return same }
        let length = word.count
        let limit = length <= 4 ? 1 : (length <= 9 ? 2 : 3)
        var best: (String, Int)?
        for candidate in candidates {
            let d = distance(Array(word.lowercased().unicodeScalars), Array(candidate.lowercased().unicodeScalars))
            if d <= limit, d < (best?.1 ?? Int.max) { best = (candidate, d) }
        }
        // A word cut short, run on or with another ending (upstream -> upstreams, enforcing -> enforce,
        // prod -> production): a shared start of at least 4 characters, missing at most one of the shorter.
        // Only when no candidate is a close misspelling (trusted_proxys -> trusted_proxies, not trust).
        if let best { return best.0 }
        let lowered = Array(word.lowercased())
        guard lowered.count >= 4 else { return nil }
        return candidates.first {
            let c = Array($0.lowercased())
            let shared = zip(c, lowered).prefix { $0 == $1 }.count
            return shared >= 4 && shared >= min(c.count, lowered.count) - 1
        }
    }

    /// `; did you mean X?` or the empty string.
    static func hint(_ word: String, among candidates: [String]) -> String {
        guard let match = closest(to: word, among: candidates), match != word else { return "" }
        return "; did you mean \(match)?"
    }

    private static func fold(_ s: String) -> String {
        String(s.lowercased().unicodeScalars.filter { $0 != "_" && $0 != "-" && $0 != " " })
    }

    /// Levenshtein distance (insert, delete, substitute; plus adjacent transposition).
    static func distance(_ a: [Unicode.Scalar], _ b: [Unicode.Scalar]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        guard a.count <= 256, b.count <= 256 else { return Int.max / 2 }
        var previous2 = [Int](repeating: 0, count: b.count + 1)
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
                if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                    current[j] = min(current[j], previous2[j - 2] + 1)
                }
            }
            (previous2, previous, current) = (previous, current, previous2)
        }
        return previous[b.count]
    }
}
