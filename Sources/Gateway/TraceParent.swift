/// The W3C Trace Context `traceparent` field (https://www.w3.org/TR/trace-context/ section 3.2):
/// `version "-" trace-id "-" parent-id "-" trace-flags`, lower-case hex, e.g.
/// `00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01`.
///
/// The gateway passes a valid one through to the upstream untouched and drops an invalid one (and
/// its `tracestate`, which means nothing without it), as the specification asks of a participant
/// that cannot parse it.
enum TraceParent {
    /// Length of a version `00` value (and of the part a later version must start with).
    static let length = 55

    /// The 32 hex digits of the trace id when `value` is a valid `traceparent`, else nil:
    /// version two hex digits other than `ff`; for `00` exactly 55 bytes, for a later version at
    /// least 55 with a `-` after them; trace-id (32) and parent-id (16) hex, not all zeros; flags two
    /// hex digits.
    static func traceID(_ value: ArraySlice<UInt8>) -> ArraySlice<UInt8>? {
        guard value.count >= length else { return nil }
        let s = value.startIndex
        let version = value[s..<(s + 2)]
        guard isHex(version), !(version.first == UInt8(ascii: "f") && version.last == UInt8(ascii: "f")) else { return nil }
        if version.elementsEqual("00".utf8) {
            guard value.count == length else { return nil }
        } else if value.count > length {
            guard value[s + length] == UInt8(ascii: "-") else { return nil }
        }
        let dash = UInt8(ascii: "-")
        guard value[s + 2] == dash, value[s + 35] == dash, value[s + 52] == dash else { return nil }
        let trace = value[(s + 3)..<(s + 35)]
        let parent = value[(s + 36)..<(s + 52)]
        let flags = value[(s + 53)..<(s + 55)]
        guard isHex(trace), isHex(parent), isHex(flags) else { return nil }
        let zero = UInt8(ascii: "0")
        guard trace.contains(where: { $0 != zero }), parent.contains(where: { $0 != zero }) else { return nil }
        return trace
    }

    /// Lower-case hex digits only.
    private static func isHex(_ bytes: ArraySlice<UInt8>) -> Bool {
        bytes.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
