/// Counts the members of a JSON body's top-level object as written, so that the endpoints can refuse
/// a duplicated member: Foundation's `JSONSerialization` keeps the last of two equal keys silently,
/// and a component in front of the gateway that keeps the first would see another request (RFC 8259
/// section 4: names "SHOULD be unique"; RFC 7493 (I-JSON) section 2.3: "MUST NOT" repeat).
///
/// One home for the endpoints' bodies (`EndpointRequest`, `RegistrationBody`): compare
/// `topLevelMembers(body)` with the parsed dictionary's count; a difference is a repeated name (also
/// one written twice in different escapes, `"a"` and `"\u0061"`, which decode to one key).
enum JSONMemberCount {
    /// The `:` separators at depth 1 outside strings of `body`, which must already be valid JSON
    /// whose top level is an object: its members as written.
    static func topLevelMembers(_ body: [UInt8]) -> Int {
        var depth = 0
        var inString = false
        var escaped = false
        var count = 0
        for byte in body {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == 0x5C {  // backslash
                    escaped = true
                } else if byte == 0x22 {  // closing quote
                    inString = false
                }
                continue
            }
            switch byte {
            case 0x22: inString = true
            case 0x7B, 0x5B: depth += 1  // { [
            case 0x7D, 0x5D: depth -= 1  // } ]
            case 0x3A where depth == 1: count += 1  // :
            default: break
            }
        }
        return count
    }
}
