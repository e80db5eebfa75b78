import Foundation

/// A unit's `SystemCallFilter=` lines resolved to system call names with systemd's own group table
/// (`systemd-analyze syscall-filter`), and the check that a traced process stayed inside them.
struct SystemCallFilter {
    /// The calls the filter lets through.
    let allowed: Set<String>

    /// Resolves `lines` (`@system-service`, `~@privileged @resources`) against `groups`: the allow
    /// lists' union plus `@default` (which systemd always permits), minus every `~` list.
    init(lines: [String], groups: [String: [String]]) {
        func expand(_ entry: String, _ seen: inout Set<String>) -> Set<String> {
            guard entry.hasPrefix("@") else { return [entry] }
            guard seen.insert(entry).inserted else { return [] }
            var names = Set<String>()
            for member in groups[entry] ?? [] { names.formUnion(expand(member, &seen)) }
            return names
        }
        var allow = Set<String>(), deny = Set<String>()
        for line in lines {
            let negated = line.hasPrefix("~")
            for entry in line.dropFirst(negated ? 1 : 0).split(separator: " ").map(String.init) {
                var seen = Set<String>()
                if negated { deny.formUnion(expand(entry, &seen)) } else { allow.formUnion(expand(entry, &seen)) }
            }
        }
        var seen = Set<String>()
        allowed = allow.union(expand("@default", &seen)).subtracting(deny)
    }

    /// Parses `systemd-analyze syscall-filter`: a `@group` line, then its members indented (calls or
    /// nested `@groups`), `#` comments.
    static func groups(fromAnalyzeOutput text: String) -> [String: [String]] {
        var groups: [String: [String]] = [:]
        var current: String?
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = raw.trimmingCharacters(in: .whitespaces)
            if line.isEmpty || line.hasPrefix("#") { if line.isEmpty { current = nil }; continue }
            if !raw.hasPrefix(" ") && line.hasPrefix("@") { current = line; groups[line] = []; continue }
            if let current, raw.hasPrefix(" ") { groups[current, default: []].append(line) }
        }
        return groups
    }

    /// The `SystemCallFilter=` values of a unit file, in order.
    static func lines(ofUnit text: String) -> [String] {
        text.split(separator: "\n").compactMap { line in
            line.hasPrefix("SystemCallFilter=") ? String(line.dropFirst("SystemCallFilter=".count)) : nil
        }
    }

    /// The families of the unit's `RestrictAddressFamilies=` (`AF_INET AF_INET6 AF_UNIX`).
    static func addressFamilies(ofUnit text: String) -> Set<String> {
        Set(text.split(separator: "\n").filter { $0.hasPrefix("RestrictAddressFamilies=") }
            .flatMap { $0.dropFirst("RestrictAddressFamilies=".count).split(separator: " ").map(String.init) })
    }

    /// The address families of the sockets a trace opens (`socket(AF_INET, ...`).
    static func socketFamilies(inTrace text: String) -> Set<String> {
        var families = Set<String>()
        for line in text.split(separator: "\n") {
            guard let call = line.range(of: " socket(") ?? (line.hasPrefix("socket(") ? line.range(of: "socket(") : nil) else { continue }
            let family = line[call.upperBound...].prefix { $0 != "," && $0 != ")" }
            families.insert(String(family))
        }
        return families
    }

    /// The system call names in `strace -f` output (`PID name(args) = result`; resumed calls, signals
    /// and exits left out).
    static func calls(inTrace text: String) -> Set<String> {
        var names = Set<String>()
        for line in text.split(separator: "\n") {
            var rest = Substring(line)
            if let first = rest.first, first.isNumber {  // "PID " prefix of -f
                rest = rest.drop { $0.isNumber }.drop { $0 == " " }
            }
            guard let paren = rest.firstIndex(of: "("), paren > rest.startIndex else { continue }
            let name = rest[..<paren]
            if name.allSatisfy({ $0.isLowercase || $0.isNumber || $0 == "_" }) { names.insert(String(name)) }
        }
        return names
    }
}
