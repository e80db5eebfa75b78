import Foundation

/// Base64 as the gateway speaks it: it sends standard base64; it accepts standard or base64url,
/// padded or not (DESIGN.md section 1). The SDK decodes both.
enum Base64Text {
    /// Standard, padded.
    static func encode(_ data: Data) -> String { data.base64EncodedString() }

    /// Standard or URL alphabet, padded or not; nil for anything else.
    static func decode(_ text: String) -> Data? {
        var s = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while s.count % 4 != 0 { s += "=" }
        return Data(base64Encoded: s)
    }
}
