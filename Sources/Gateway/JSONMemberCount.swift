/// Counts the members of a JSON body's top-level object as written, so that the endpoints can refuse
/// a duplicated member: Foundation's `JSONSerialization` keeps the last of two equal keys silently,
/// and a component in front of the gateway that keeps the first would see another request (RFC 8259
/// section 4: names "SHOULD be unique"; RFC 7493 (I-JSON) section 2.3: "MUST NOT" repeat).
///
/// One home for the endpoints' bodies (`EndpointRequest`, `RegistrationBody`): `repeatsAName(body,
/// parsed:)` compares the members as written, in every object at any depth (`/register`'s nested
/// `appAttest` and `deviceKey` objects too), with the members the parse kept; a difference is a
/// repeated name (also one written twice in different escapes, `"a"` and `"\u0061"`, which decode
/// to one key).
enum JSONMemberCount {
    /// Whether `body` is UTF-8 without a byte order mark (and without a NUL byte), as RFC 8259
    /// section 8.1 requires of JSON exchanged between systems. Checked before parsing: `JSONSerialization` also takes UTF-16 and
    /// UTF-32, whose bytes the member count (which reads UTF-8) cannot follow (a probe slipped a
    /// repeated `appId` into `/register` as UTF-16).
    static func isUTF8WithoutBOM(_ body: [UInt8]) -> Bool {
        if body.count >= 3 && body[0] == 0xEF && body[1] == 0xBB && body[2] == 0xBF { return false }
        // A NUL byte is never JSON text (control characters are escaped inside strings); it is how
        // UTF-16 and UTF-32 spell ASCII, which would otherwise pass as valid UTF-8.
        if body.contains(0) { return false }
        return String(validating: body, as: UTF8.self) != nil
    }

    /// Whether some object of `body` (valid JSON, `parsed` its `JSONSerialization` value) names a
    /// member twice.
    static func repeatsAName(_ body: [UInt8], parsed: Any) -> Bool {
        members(body, topLevelOnly: false) != parsedMembers(parsed)
    }

    /// The members of every object of a parsed JSON value (dictionaries and arrays, recursively).
    static func parsedMembers(_ value: Any) -> Int {
        if let object = value as? [String: Any] { return object.count + object.values.reduce(0) { $0 + parsedMembers($1) } }
        if let array = value as? [Any] { return array.reduce(0) { $0 + parsedMembers($1) } }
        return 0
    }

    /// The `:` separators at depth 1 outside strings of `body`, which must already be valid JSON
    /// whose top level is an object: its members as written.
    static func topLevelMembers(_ body: [UInt8]) -> Int { members(body, topLevelOnly: true) }

    /// The `:` separators outside strings of valid JSON `body` (each one a member as written), at
    /// depth 1 only or at any depth.
    private static func members(_ body: [UInt8], topLevelOnly: Bool) -> Int {
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
            case 0x3A where depth == 1 || !topLevelOnly: count += 1  // :
            default: break
            }
        }
        return count
    }
}
