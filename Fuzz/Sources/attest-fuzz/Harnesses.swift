/// One fuzzing harness: a parser entry point and the invariants checked on its results.
struct Harness: Sendable {
    /// Name used on the command line and for `Fuzz/corpus/NAME`.
    let name: String
    /// One line for `attest-fuzz list`.
    let summary: String
    /// Runs one input; breaks (crashes) on a violated invariant.
    let run: @Sendable ([UInt8]) -> Void
}

/// The registry of harnesses.
enum Harnesses {
    static let all: [Harness] = [
        CBORHarness.harness,
        AuthenticatorDataHarness.harness,
        ASN1Harness.harness,
        ReceiptHarness.harness,
        AttestationHarness.harness,
        AssertionHarness.harness,
        Base64Harness.harness,
        HTTPRequestHarness.harness,
        HTTPResponseHarness.harness,
        TargetPolicyHarness.harness,
        ConfigHarness.harness,
        RESPHarness.harness,
        H2SessionHarness.harness,
        ProxyHeaderHarness.harness,
        DeviceRegistrationHarness.harness,
    ]

    static func named(_ name: String) -> Harness? { all.first { $0.name == name } }

    /// The harness libFuzzer's callback runs (set once in `main`, before fuzzing starts).
    nonisolated(unsafe) static var selected: Harness?
}
