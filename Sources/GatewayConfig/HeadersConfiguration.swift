/// The gateway's own header family (`headers`, DESIGN.md sections 1, 2 and 5).
///
/// On every route, ingress removes every request header (and trailer) whose name starts with `prefix`,
/// compared case-insensitively, all copies, after reading the evidence headers; the gateway then sets
/// the `injected` headers itself by replacement. Every evidence and injected name therefore starts with
/// `prefix` (checked), so a client can never smuggle a forged verdict to the upstream.
public struct HeadersConfiguration: Sendable, Hashable {
    /// Headers a client sends on a protected request (`headers.evidence`).
    public struct Evidence: Sendable, Hashable {
        /// keyId, base64 (default `App-Attest-Key-Id`).
        public var keyID: String
        /// Challenge, base64 (default `App-Attest-Challenge`).
        public var challenge: String
        /// Assertion CBOR, base64 (default `App-Attest-Assertion`).
        public var assertion: String
        /// Optional diagnostic copy of the client data (default `App-Attest-Client-Data`).
        public var clientData: String
        /// Device-key signature over the client data, base64 DER (default `App-Attest-Signature`;
        /// DESIGN.md section 8): sent instead of the assertion by a registered device key.
        public var signature: String

        /// Creates the evidence header names; each defaults as documented.
        public init(keyID: String = "App-Attest-Key-Id", challenge: String = "App-Attest-Challenge",
                    assertion: String = "App-Attest-Assertion", clientData: String = "App-Attest-Client-Data",
                    signature: String = "App-Attest-Signature") {
            self.keyID = keyID
            self.challenge = challenge
            self.assertion = assertion
            self.clientData = clientData
            self.signature = signature
        }

        /// All names, in the order of `ConfigSchema`'s `headers.evidence` keys.
        public var all: [String] { [keyID, challenge, assertion, clientData, signature] }
    }

    /// Headers the gateway sets on the request it forwards upstream (`headers.injected`).
    public struct Injected: Sendable, Hashable {
        /// `valid` | `invalid` | `missing` | `unverified` (default `App-Attest-Verdict`).
        public var verdict: String
        /// Reason code of the verdict (default `App-Attest-Reason`).
        public var reason: String
        /// Verified keyId, standard base64, only with verdict `valid` (default `App-Attest-Key-Id`).
        public var keyID: String
        /// Counter of the accepted assertion (default `App-Attest-Counter`).
        public var counter: String
        /// `production` | `development` (default `App-Attest-Environment`).
        public var environment: String
        /// Receipt risk metric, when known (default `App-Attest-Risk-Metric`).
        public var riskMetric: String
        /// `apple_validation_category_01` of the trailing authenticatorData map, when present
        /// (default `App-Attest-Validation-Category`).
        public var validationCategory: String
        /// `apple_bundle_version_01` of the trailing authenticatorData map, when present
        /// (default `App-Attest-Bundle-Version`).
        public var bundleVersion: String
        /// The key's trust tier, `attested` | `device`, with verdict `valid` (default `App-Attest-Tier`).
        public var tier: String
        /// `true` | `false`: whether App Attest vouched for the key (default `App-Attest-Platform-Attested`).
        public var platformAttested: String
        /// The key's integrity codes, comma-separated, when any (default `App-Attest-Integrity`).
        public var integrity: String
        /// The `signals` checks that failed under action `monitor`, comma-separated codes such as
        /// `bundle_version_too_old` (default `App-Attest-Signal-Policy`; in a configuration,
        /// `<headers.prefix>Signal-Policy` unless written).
        public var signalPolicy: String
        /// `enforced` or `monitored` on routes with `enforce_percent` (default `App-Attest-Cohort`; in
        /// a configuration, `<headers.prefix>Cohort` unless written).
        public var cohort: String
        /// Age in seconds of the risk metric, or `unknown` (default `App-Attest-Risk-Age`).
        public var riskAge: String = "App-Attest-Risk-Age"

        /// Creates the injected header names; each defaults as documented.
        public init(verdict: String = "App-Attest-Verdict", reason: String = "App-Attest-Reason",
                    keyID: String = "App-Attest-Key-Id", counter: String = "App-Attest-Counter",
                    environment: String = "App-Attest-Environment", riskMetric: String = "App-Attest-Risk-Metric",
                    validationCategory: String = "App-Attest-Validation-Category",
                    bundleVersion: String = "App-Attest-Bundle-Version", tier: String = "App-Attest-Tier",
                    platformAttested: String = "App-Attest-Platform-Attested", integrity: String = "App-Attest-Integrity",
                    signalPolicy: String = "App-Attest-Signal-Policy", cohort: String = "App-Attest-Cohort") {
            self.tier = tier
            self.platformAttested = platformAttested
            self.integrity = integrity
            self.signalPolicy = signalPolicy
            self.cohort = cohort
            self.verdict = verdict
            self.reason = reason
            self.keyID = keyID
            self.counter = counter
            self.environment = environment
            self.riskMetric = riskMetric
            self.validationCategory = validationCategory
            self.bundleVersion = bundleVersion
        }

        /// All names.
        public var all: [String] {
            [verdict, reason, keyID, counter, environment, riskMetric, validationCategory, bundleVersion, tier, platformAttested,
             integrity, signalPolicy, cohort, riskAge]
        }
    }

    /// Prefix of the gateway's header family (default `App-Attest-`); compared case-insensitively.
    public var prefix: String
    /// Names of the evidence headers.
    public var evidence: Evidence
    /// Names of the headers set on forwarded requests.
    public var injected: Injected
    /// Response header carrying the error code on every refusal (default `App-Attest-Error`).
    public var error: String

    /// Creates the header configuration; every name defaults as documented.
    public init(prefix: String = "App-Attest-", evidence: Evidence = Evidence(), injected: Injected = Injected(),
                error: String = "App-Attest-Error") {
        self.prefix = prefix
        self.evidence = evidence
        self.injected = injected
        self.error = error
    }

    /// `prefix` in lower case, as bytes: what ingress compares header names against (case-folded).
    public var lowercasedPrefixBytes: [UInt8] { Array(prefix.lowercased().utf8) }

    /// Whether `name` belongs to the gateway's family (starts with `prefix`, any case).
    public func isOwnHeader(_ name: String) -> Bool {
        name.lowercased().hasPrefix(prefix.lowercased())
    }

    /// `isOwnHeader` on the bytes of a header name (ASCII case-insensitive), without allocating
    /// (per header field of every request and trailer).
    public func isOwnHeader(name: UnsafeRawBufferPointer) -> Bool {
        var prefix = self.prefix
        return prefix.withUTF8 { p in
            guard name.count >= p.count else { return false }
            for i in 0..<p.count {
                var a = name[i], b = p[i]
                if a >= UInt8(ascii: "A") && a <= UInt8(ascii: "Z") { a |= 0x20 }
                if b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z") { b |= 0x20 }
                if a != b { return false }
            }
            return true
        }
    }
}
