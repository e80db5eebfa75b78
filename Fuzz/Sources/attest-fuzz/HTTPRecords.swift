import GatewayHTTP

/// What a stream parser reported, normalised so that a run fed in one piece and a run fed in many
/// pieces can be compared: consecutive body events are merged into one.
enum HTTPRecord: Equatable, CustomStringConvertible {
    case head(String)
    case body([UInt8])
    case end(String)
    case error(HTTPError)
    case finish(String)

    var description: String {
        switch self {
        case .head(let s): return "head(\(s))"
        case .body(let b): return "body(\(b.count) bytes)"
        case .end(let s): return "end(\(s))"
        case .error(let e): return "error(\(e.rawValue))"
        case .finish(let s): return "finish(\(s))"
        }
    }

    static func append(_ record: HTTPRecord, to records: inout [HTTPRecord]) {
        if case .body(let more) = record, case .body(let before)? = records.last {
            records[records.count - 1] = .body(before + more)
        } else {
            records.append(record)
        }
    }

    static func summary(_ headers: HTTPHeaders) -> String {
        headers.map { "\($0.name):\($0.value)" }.joined(separator: "|")
    }

    /// Compares a whole run with a split run. When both end with `bodyTooLarge`, the body just
    /// before may legitimately differ in length (pieces are delivered as they arrive, a large
    /// piece is refused at once): one must then be a prefix of the other.
    static func sameOutcome(_ whole: [HTTPRecord], _ split: [HTTPRecord]) -> Bool {
        if whole == split { return true }
        guard whole.last == .error(.bodyTooLarge), split.last == .error(.bodyTooLarge) else { return false }
        func strip(_ r: [HTTPRecord]) -> ([HTTPRecord], [UInt8]) {
            var r = r
            r.removeLast()
            if case .body(let b)? = r.last { r.removeLast(); return (r, b) }
            return (r, [])
        }
        let (a, ab) = strip(whole), (b, bb) = strip(split)
        return a == b && (ab.starts(with: bb) || bb.starts(with: ab))
    }

    /// Field-line checks shared by requests and responses: names are tokens, values have no
    /// control bytes and no surrounding whitespace.
    static func checkFields(_ headers: HTTPHeaders, _ h: String) {
        for field in headers {
            Invariant.check(!field.nameBytes.isEmpty && field.nameBytes.allSatisfy(isTchar), h, "field name is not a token")
            Invariant.check(field.valueBytes.allSatisfy { $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }, h, "control byte in a field value")
            if let first = field.valueBytes.first, let last = field.valueBytes.last {
                Invariant.check(first != 0x20 && first != 0x09 && last != 0x20 && last != 0x09, h, "field value not trimmed")
            }
        }
    }

    static func isTchar(_ b: UInt8) -> Bool {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"): return true
        default: return Array("!#$%&'*+-.^_`|~".utf8).contains(b)
        }
    }

    /// The comma-separated elements of every field named `name`, trimmed, lower-cased.
    static func listElements(_ headers: HTTPHeaders, _ name: String) -> [String] {
        headers.values(name).flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }
            .map { element -> String in
                var u = Array(element.utf8)
                while let f = u.first, f == 0x20 || f == 0x09 { u.removeFirst() }
                while let l = u.last, l == 0x20 || l == 0x09 { u.removeLast() }
                return String(decoding: u, as: UTF8.self).lowercased()
            }
    }

    /// `1*DIGIT` as Int, nil otherwise (or on overflow).
    static func decimal(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}
