import GatewayRules

/// An App ID, `TEAMID.bundle.identifier` (`apps[].app_id`): the team ID (10 upper-case letters or
/// digits), a dot, then the bundle identifier (letters, digits, `-` and `.`; no empty component).
///
/// `description` is the exact string whose SHA-256 is the rpIdHash of the app's attestations and
/// assertions (Apple: Validating apps that connect to your server, step 7 "rpIdHash").
public struct AppID: Sendable, Hashable, CustomStringConvertible {
    /// The 10-character team ID (App ID prefix).
    public let teamID: String
    /// The bundle identifier (on macOS, the signing identifier).
    public let bundleID: String

    /// `TEAMID.bundle`.
    public var description: String { "\(teamID).\(bundleID)" }

    /// Creates an App ID from its parts, or nil when either part is malformed.
    public init?(teamID: String, bundleID: String) {
        guard AppID.isTeamID(teamID), AppID.isBundleID(bundleID) else { return nil }
        self.teamID = teamID
        self.bundleID = bundleID
    }

    /// Parses `TEAMID.bundle`, or nil.
    public init?(_ text: String) {
        guard let dot = text.firstIndex(of: ".") else { return nil }
        self.init(teamID: String(text[..<dot]), bundleID: String(text[text.index(after: dot)...]))
    }

    static func isTeamID(_ s: String) -> Bool {
        s.utf8.count == 10 && s.utf8.allSatisfy { ($0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) }
    }

    static func isBundleID(_ s: String) -> Bool {
        guard !s.isEmpty, s.utf8.count <= 255 else { return false }
        return s.split(separator: ".", omittingEmptySubsequences: false).allSatisfy { part in
            !part.isEmpty && part.utf8.allSatisfy { URISyntax.isUnreserved($0) && $0 != UInt8(ascii: "_") && $0 != UInt8(ascii: "~") && $0 != UInt8(ascii: ".") }
        }
    }

    /// Why `text` is not an App ID (for messages), or nil when it is one.
    static func problem(_ text: String) -> String? {
        guard let dot = text.firstIndex(of: ".") else {
            return "expected TEAMID.bundle.identifier (team ID, a dot, the bundle ID), got \(ConfigText.quoted(text))"
        }
        let team = String(text[..<dot]), bundle = String(text[text.index(after: dot)...])
        if !isTeamID(team) {
            if isTeamID(team.uppercased()) {
                return "the team ID must be upper case: \(team.uppercased()).\(bundle)"
            }
            return "the team ID \(ConfigText.quoted(team)) must be 10 upper-case letters or digits (Membership details in the Apple Developer account)"
        }
        if !isBundleID(bundle) {
            return "the bundle ID \(ConfigText.quoted(bundle)) may only contain letters, digits, - and . (no empty parts)"
        }
        return nil
    }
}
