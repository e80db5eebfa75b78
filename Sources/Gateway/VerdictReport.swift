import AppAttest
import GatewayConfig
import GatewayHTTP
import GatewayStore

/// What the gateway learned about a request on an `enforce` or `monitor` route: the verdict, the
/// reason and, when valid, the key's facts. Sent upstream as the gateway's own headers and written to
/// the access log (never the challenge, the assertion or the body).
struct VerdictReport: Sendable {
    /// The verdict.
    var verdict: Verdict
    /// Stable reason code when the verdict is not `valid`.
    var reason: String?
    /// The keyId, once it decoded.
    var keyId: KeyID?
    /// `keyId` in standard base64 when already known (the key cache keeps it), else encoded on use.
    var keyIdBase64: String?
    /// The accepted counter (valid only).
    var counter: UInt32?
    /// The key's environment (valid only).
    var environment: String?
    /// iOS 27 authenticatorData signals of the assertion (valid only).
    var signals: AuthenticatorSignals?
    /// The key's trust tier, `attested` | `device` (valid only; recorded on monitor routes even when
    /// below the route's `min_tier`).
    var tier: String?
    /// Whether App Attest vouched for the key (valid only).
    var platformAttested: Bool?
    /// The key's integrity codes joined by `,` (valid only, when any).
    var integrity: String?
    /// The `signals` policy decisions of the assertion (counted in metrics, by value).
    var signalDecisions: [SignalCheck.Decision] = []
    /// Codes of failed `monitor` signal checks (valid only), for `App-Attest-Signal-Policy`.
    var signalPolicy: [String] = []
    /// `enforced` or `monitored` on routes with `enforce_percent`, for `App-Attest-Cohort`.
    var cohort: String?
    /// The key's App ID (valid only; selects the app's `verdict_token` section).
    var appId: String?
    /// SHA-256 of the body as the client-data binding computed it (the verdict token's body digest),
    /// when the enforcer got that far.
    var bodySHA256: [UInt8]?
    /// The key's fraud metric headers (valid only): value and age, `unknown` when not current
    /// (`RiskHeaders`).
    var risk: RiskHeaders?

    init(_ verdict: Verdict, reason: String? = nil, keyId: KeyID? = nil) {
        self.verdict = verdict
        self.reason = reason
        self.keyId = keyId
    }

    /// Sets the injected headers by replacement (after the ingress strip removed every client copy).
    /// Values that cannot be valid header values (an odd bundle version) are left out.
    func apply(to headers: inout HTTPHeaders, names: HeadersConfiguration.Injected) {
        try? headers.replaceOrAdd(name: names.verdict, value: verdict.rawValue)
        if let reason { try? headers.replaceOrAdd(name: names.reason, value: reason) }
        if let cohort { try? headers.replaceOrAdd(name: names.cohort, value: cohort) }
        guard verdict == .valid else { return }
        if !signalPolicy.isEmpty { try? headers.replaceOrAdd(name: names.signalPolicy, value: signalPolicy.joined(separator: ",")) }
        if let keyId { try? headers.replaceOrAdd(name: names.keyID, value: keyIdBase64 ?? Base64.encode(keyId.bytes)) }
        if let counter { try? headers.replaceOrAdd(name: names.counter, value: String(counter)) }
        if let environment { try? headers.replaceOrAdd(name: names.environment, value: environment) }
        if let category = signals?.validationCategory {
            try? headers.replaceOrAdd(name: names.validationCategory, value: VerdictReport.hex(category))
        }
        if let version = signals?.bundleVersion {
            try? headers.replaceOrAdd(name: names.bundleVersion, value: version)
        }
        if let tier { try? headers.replaceOrAdd(name: names.tier, value: tier) }
        if let platformAttested { try? headers.replaceOrAdd(name: names.platformAttested, value: platformAttested ? "true" : "false") }
        if let integrity { try? headers.replaceOrAdd(name: names.integrity, value: integrity) }
        if let risk {
            try? headers.replaceOrAdd(name: names.riskMetric, value: risk.metric)
            try? headers.replaceOrAdd(name: names.riskAge, value: risk.age)
        }
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes { out.append(digits[Int(b >> 4)]); out.append(digits[Int(b & 0xF)]) }
        return String(decoding: out, as: UTF8.self)
    }
}
