import GatewayRules

/// The rollout and risk-signal policy keys (issue 12): `signals` on apps and routes, and
/// `endpoints.fleet_attest_rate`.
extension ConfigValidator {
    /// `signals: {validation_category: {allowed, action}, bundle_version: {minimum, action}}`; at
    /// least one of the two.
    func signalPolicy(_ node: YAMLNode, _ path: ConfigPath) -> SignalPolicy? {
        guard let f = fields(node, path, .signals, what: "a mapping with validation_category and/or bundle_version") else { return nil }
        var ok = true
        var policy = SignalPolicy()
        if let categoryNode = f.node("validation_category") {
            let p = path.key("validation_category")
            if let c = fields(categoryNode, p, .signalCategory, what: "a mapping {allowed: [hex, ...], action: monitor | enforce}") {
                var allowed: [[UInt8]] = []
                if let listNode = c.node("allowed") {
                    let lp = p.key("allowed")
                    if let items = list(listNode, lp, of: "hex values such as \"01000000\"") {
                        if items.isEmpty { error(lp, "list at least one allowed value", listNode.mark); ok = false }
                        for (i, item) in items.enumerated() {
                            guard let text = string(item, lp.index(i), expected: "a hex value such as \"01000000\"") else { ok = false; continue }
                            guard let bytes = ConfigValidator.hexBytes(text), (1...SignalPolicy.ValidationCategory.maximumBytes).contains(bytes.count) else {
                                error(lp.index(i), "\(ConfigText.quoted(text)) is not 1 to 64 bytes of hex (as App-Attest-Validation-Category shows it, e.g. 01000000)", item.mark)
                                ok = false
                                continue
                            }
                            if allowed.contains(bytes) { error(lp.index(i), "\(text) is listed twice", item.mark); ok = false }
                            allowed.append(bytes)
                        }
                    } else { ok = false }
                } else {
                    missing(c, "allowed", " (the apple_validation_category_01 values to accept, in hex)")
                    ok = false
                }
                let action = c.node("action").map { choice($0, p.key("action"), SignalPolicy.Action.self) }
                if action == nil { missing(c, "action", " (monitor or enforce)") }
                if let action = action ?? nil, ok {
                    policy.validationCategory = SignalPolicy.ValidationCategory(allowed: allowed, action: action)
                } else { ok = false }
            } else { ok = false }
        }
        if let versionNode = f.node("bundle_version") {
            let p = path.key("bundle_version")
            if let v = fields(versionNode, p, .signalVersion, what: "a mapping {minimum: \"2.3\", action: monitor | enforce}") {
                var minimum: DottedVersion?
                if let minNode = v.node("minimum") {
                    if let text = string(minNode, p.key("minimum"), expected: "a dotted version such as \"2.3.1\"") {
                        minimum = DottedVersion(text)
                        if minimum == nil {
                            error(p.key("minimum"), "\(ConfigText.quoted(text)) is not a dotted number such as 2, 2.3 or 2.3.10 (CFBundleVersion)", minNode.mark)
                        }
                    }
                } else {
                    missing(v, "minimum", " (the lowest apple_bundle_version_01 accepted, e.g. \"2.3\")")
                }
                let action = v.node("action").map { choice($0, p.key("action"), SignalPolicy.Action.self) }
                if action == nil { missing(v, "action", " (monitor or enforce)") }
                if let minimum, let action = action ?? nil {
                    policy.bundleVersion = SignalPolicy.BundleVersion(minimum: minimum, action: action)
                } else { ok = false }
            } else { ok = false }
        }
        if ok && policy.isEmpty && f.misspelt.isEmpty {
            error(path, "configure validation_category and/or bundle_version (or remove signals)", node.mark)
            ok = false
        }
        return ok ? policy : nil
    }

    /// `endpoints.fleet_attest_rate: {count, per}`.
    func fleetAttestRate(_ node: YAMLNode, _ path: ConfigPath) -> EndpointsConfiguration.FleetRate? {
        guard let f = fields(node, path, .fleetAttestRate, what: "a mapping {count: N, per: 1s}") else { return nil }
        let count: Int?? = f.node("count").map { integer($0, path.key("count"), 1...1_000_000) }
        if count == nil { missing(f, "count", " (attest challenges per window, across the fleet)") }
        let per = optional(f, "per", default: Duration.seconds(1)) { duration($0, $1, .seconds(1) ... .seconds(3600)) }
        guard let count = count ?? nil, let per else { return nil }
        return EndpointsConfiguration.FleetRate(count: count, per: per)
    }

    /// Bytes of an even-length hex string (either case), nil otherwise.
    static func hexBytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard !digits.isEmpty, digits.count % 2 == 0 else { return nil }
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): return c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
            default: return nil
            }
        }
        var out: [UInt8] = []
        var i = 0
        while i < digits.count {
            guard let hi = value(digits[i]), let lo = value(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }
}
