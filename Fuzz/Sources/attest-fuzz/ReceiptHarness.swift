import AppAttest

/// `receipt`: `ReceiptVerifier.verify` (CMS SignedData in BER, payload, signature, signer chain)
/// under Apple's receipt root and under the test root (so receipts synthesised under the test CA
/// pass the chain check and mutations explore what follows).
///
/// Invariants: the result is consistent (`isValid` iff no failure; valid implies a decoded receipt
/// and a signed content; no decoded receipt implies `receipt_malformed`); a decoded receipt implies
/// the input is well-formed BER (checked with a separate `ASN1Reader` run); verifying twice gives
/// the same result (no hidden state; checked on a sample).
enum ReceiptHarness {
    static let harness = Harness(name: "receipt", summary: "ReceiptVerifier.verify (CMS/BER, payload, signature, chain)") { run($0) }
    static let apple = ReceiptVerifier(trust: .apple)
    static let test = ReceiptVerifier(trust: FuzzTrust.testReceipts)

    static func run(_ input: [UInt8]) {
        let h = "receipt"
        let first = apple.verify(input)
        Verbose.note(h, "apple: \(first.failure?.rawValue ?? "valid") \(first.detail); test root: \(test.verify(input).failure?.rawValue ?? "valid")")
        for result in [first, test.verify(input)] {
            Invariant.check(result.isValid == (result.failure == nil), h, "isValid disagrees with failure \(String(describing: result.failure))")
            if result.isValid {
                Invariant.check(result.receipt != nil && result.signedContent != nil, h, "valid without a receipt or signed content")
            }
            if result.signatureValid { Invariant.check(result.signedContent != nil, h, "signatureValid without signedContent") }
            if result.receipt == nil {
                Invariant.check(result.failure == .receiptMalformed, h, "no receipt but failure \(String(describing: result.failure))")
            } else {
                Invariant.check((try? ASN1Reader(rules: .ber, maxDepth: 24).parse(input)) != nil, h, "receipt decoded from input that is not BER")
            }
        }
        if input.count % 8 == 0 {  // a sample (each verification costs two ECDSA checks and a chain)
            Invariant.check(apple.verify(input) == first, h, "verification is not deterministic")
        }
    }
}
