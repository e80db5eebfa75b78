import GatewayRules

/// `target`: `RequestTargetPolicy.validate` (GatewayRules: the one normal-form rule of the gateway and `check-config`). Input: byte 0 bit 0 = allowSemicolonInPath, then the
/// request-target bytes.
///
/// Invariants: the policy and the independent `TargetCheck` agree exactly (accept/refuse and the
/// returned path length); an accepted path holds none of `//`, `/./`, `/../`, a final `/.` or `/..`,
/// `%2F`, `%5C`, `%2E`, `%00`, a backslash, space, `#` or a byte outside visible ASCII.
enum TargetPolicyHarness {
    static let harness = Harness(name: "target", summary: "RequestTargetPolicy.validate vs an independent normal-form check") { run($0) }

    static func run(_ input: [UInt8]) {
        let h = "target"
        var reader = FuzzInput(input)
        let allowSemicolon = reader.u8() & 1 == 1
        let target = reader.rest()
        let policy = RequestTargetPolicy(allowSemicolonInPath: allowSemicolon)
        let result: Result<Int, TargetViolation> = target.withUnsafeBytes { b in
            do throws(TargetViolation) { return .success(try policy.validate(b)) } catch { return .failure(error) }
        }
        let independent = TargetCheck.normalPathLength(target, allowSemicolon: allowSemicolon)
        switch result {
        case .success(let pathLength):
            Invariant.check(independent == pathLength, h, "policy accepted (path length \(pathLength)), independent check says \(String(describing: independent))")
            if let bad = TargetCheck.hasForbiddenPattern(Array(target[..<pathLength])) { Invariant.fail(h, "accepted path holds \(bad)") }
        case .failure(let error):
            Invariant.check(independent == nil, h, "policy refused (\(error)), independent check accepts")
        }
    }
}
