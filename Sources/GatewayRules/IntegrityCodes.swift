/// The integrity signals a client reports when it registers a device key (DESIGN.md section 8,
/// field `integrity`): short codes, never paths or app names.
///
/// Shape: at most `maximumCount` codes, each 1...`maximumLength` bytes of `[a-z0-9_]`, no duplicates.
/// Codes outside `documented` are accepted and recorded (clients may learn new checks before the
/// gateway does); anything outside the shape is refused (`integrity_invalid`). Order is kept as sent,
/// because the registration client data joins the codes with `,` in the order the client signed.
public enum IntegrityCodes {
    /// Most codes in one registration.
    public static let maximumCount = 16
    /// Longest code, bytes.
    public static let maximumLength = 32

    /// The codes the gateway documents (Config/REFERENCE.md, "Integrity codes"), with their meaning.
    public static let documented: [(code: String, meaning: String)] = [
        ("jb_files", "files or folders that only jailbroken devices have are present"),
        ("jb_scheme", "a URL scheme of a jailbreak tool opens"),
        ("jb_sandbox", "the app could write outside its sandbox"),
        ("debugger", "a debugger is attached to the process"),
        ("dyld_inject", "an unexpected dynamic library is loaded into the process"),
        ("hooked", "a function the app checks was hooked or patched"),
        ("simulator", "the app runs in the iOS Simulator"),
    ]

    /// Why a list of codes was refused, as one sentence.
    public static func problem(_ codes: [String]) -> String? {
        if codes.count > maximumCount { return "at most \(maximumCount) integrity codes, got \(codes.count)" }
        var seen = Set<String>()
        for code in codes {
            if let problem = problem(code: code) { return problem }
            if !seen.insert(code).inserted { return "integrity code \(code) is listed twice" }
        }
        return nil
    }

    /// Why one code is not a valid code (nil when it is).
    public static func problem(code: String) -> String? {
        let utf8 = code.utf8
        guard (1...maximumLength).contains(utf8.count) else {
            return "an integrity code is 1 to \(maximumLength) bytes, got \(utf8.count)"
        }
        guard utf8.allSatisfy({ ($0 >= 0x61 && $0 <= 0x7a) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x5f }) else {
            return "integrity codes are short identifiers of [a-z0-9_] (never paths or app names)"
        }
        return nil
    }

    /// Whether `code` is one of `documented`.
    public static func isDocumented(_ code: String) -> Bool { documented.contains { $0.code == code } }
}
