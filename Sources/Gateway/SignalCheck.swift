import AppAttest
import GatewayConfig
import GatewayRules

/// The `signals` policy (`SignalPolicy`, issue 12 "iOS 27 signals") applied to the signals of one
/// verified assertion: one decision per configured check, the refusal when an `enforce` check
/// failed, the codes of failed `monitor` checks for `App-Attest-Signal-Policy`.
///
/// A signal the assertion does not carry passes (`absent`): absence is never suspicious by itself.
/// Pure; allocates only when a policy is configured.
struct SignalCheck: Sendable {
    /// One decision, as counted in `attest_gateway_signal_decisions_total`.
    struct Decision: Sendable, Equatable {
        /// `validation_category` or `bundle_version`.
        let signal: String
        /// The carried value (hex category, version text; `none` when absent, `empty` when carried
        /// empty, `invalid` when the category is longer than 64 bytes or the version text is not
        /// printable or longer than 32 bytes: a metric label stays short whatever a key signs).
        let value: String
        /// `allowed`, `refused` or `absent`.
        let outcome: String
        /// `monitor` or `enforce`.
        let action: String
    }

    /// Every configured check's decision.
    var decisions: [Decision] = []
    /// The refusal of the first failed `enforce` check (category before version), if any.
    var refusal: Refusal?
    /// Codes of the failed `monitor` checks (`validation_category_not_allowed`, `bundle_version_too_old`).
    var monitored: [String] = []

    /// Applies `policy` to `signals` (nil: the assertion carried no iOS 27 map).
    init(_ signals: AuthenticatorSignals?, policy: SignalPolicy) {
        if let check = policy.validationCategory {
            let value = signals?.validationCategory
            let allowed = value.map { v in check.allowed.contains(v) } ?? true
            record("validation_category", value: value.map(SignalCheck.categoryLabel) ?? "none",
                   outcome: value == nil ? "absent" : allowed ? "allowed" : "refused", action: check.action)
            if !allowed {
                fail(code: "validation_category_not_allowed",
                     detail: "apple_validation_category_01 \(value.map(VerdictReport.hex) ?? "") is not allowed here", action: check.action)
            }
        }
        if let check = policy.bundleVersion {
            let text = signals?.bundleVersion
            let version = text.flatMap(DottedVersion.init)
            let allowed = text == nil || (version.map { $0 >= check.minimum } ?? false)
            record("bundle_version", value: text.map(SignalCheck.label) ?? "none",
                   outcome: text == nil ? "absent" : allowed ? "allowed" : "refused", action: check.action)
            if !allowed {
                let shown = text.map(SignalCheck.label) ?? ""
                fail(code: "bundle_version_too_old",
                     detail: version == nil ? "apple_bundle_version_01 \(shown) is not a dotted version"
                                            : "apple_bundle_version_01 \(shown) is below \(check.minimum): update the app",
                     action: check.action)
            }
        }
    }

    private mutating func record(_ signal: String, value: String, outcome: String, action: SignalPolicy.Action) {
        decisions.append(Decision(signal: signal, value: value, outcome: outcome, action: action.rawValue))
    }

    private mutating func fail(code: String, detail: String, action: SignalPolicy.Action) {
        switch action {
        case .enforce: if refusal == nil { refusal = .signalRefused(code: code, detail: detail) }
        case .monitor: monitored.append(code)
        }
    }

    /// A version text as a label and in details: as carried when printable ASCII of at most 32
    /// bytes, else `invalid`.
    static func label(_ text: String) -> String {
        let utf8 = text.utf8
        if utf8.isEmpty { return "empty" }
        return utf8.count <= 32 && utf8.allSatisfy { $0 > 0x20 && $0 < 0x7f && $0 != 0x22 && $0 != 0x5c } ? text : "invalid"
    }

    /// The category as a metric label: hex of at most `ValidationCategory.maximumBytes` (64, the longest value `allowed` takes),
    /// `empty`, or `invalid` (a probe's 5,000-byte category made a 10 KB series per value).
    static func categoryLabel(_ bytes: [UInt8]) -> String {
        if bytes.isEmpty { return "empty" }
        return bytes.count <= SignalPolicy.ValidationCategory.maximumBytes ? VerdictReport.hex(bytes) : "invalid"
    }
}
