import AppAttest
import AttestCrypto

/// `assertion`: `AssertionVerifier.verify`. Framed input (`AssertionHarness.frame`):
/// `options(1) previousCounter(4, BE) publicKey(65, X9.63) rpIdHash(32) clientDataHashLength(1)
/// clientDataHash assertionObject...`; options bit 0: check the counter against previousCounter. An
/// invalid public key is replaced by the P-256 generator point (so mutations there are not wasted).
///
/// Invariants on acceptance, re-derived here: the object is a CBOR map with byte strings
/// `signature` and `authenticatorData`; authenticatorData parses as an assertion whose rpIdHash is
/// the expected one and whose counter is the accepted counter, above previousCounter when checked;
/// the signature verifies over the message SHA256(authenticatorData || clientDataHash).
enum AssertionHarness {
    static let harness = Harness(name: "assertion", summary: "AssertionVerifier.verify (framed: options, previous counter, key, rpIdHash, clientDataHash, object)") { run($0) }

    /// The P-256 base point G (SEC 2), a valid public key.
    static let generator: P256PublicKey = {
        let hex = "046B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C2964FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5"
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            bytes.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        guard let key = try? P256PublicKey(x963: bytes) else { fatalError("P-256 generator point refused") }
        return key
    }()

    static func frame(checkCounter: Bool, previousCounter: UInt32, publicKey: [UInt8], rpIdHash: [UInt8], clientDataHash: [UInt8], object: [UInt8]) -> [UInt8] {
        [checkCounter ? 1 : 0] + FuzzFrame.u32(previousCounter) + (publicKey + [UInt8](repeating: 0, count: 65)).prefix(65)
            + (rpIdHash + [UInt8](repeating: 0, count: 32)).prefix(32) + FuzzFrame.shortField(clientDataHash) + object
    }

    static func run(_ input: [UInt8]) {
        let h = "assertion"
        var reader = FuzzInput(input)
        let checkCounter = reader.u8() & 1 == 1
        let previous = reader.u32()
        let point = reader.take(65)
        let key = (try? P256PublicKey(x963: point)) ?? generator
        let rpIdHash = reader.take(32)
        let clientDataHash = reader.shortField()
        let object = reader.rest()
        let decision = AssertionVerifier.verify(assertionObject: object, publicKey: key, rpIdHash: rpIdHash, clientDataHash: clientDataHash,
                                                previousCounter: checkCounter ? previous : nil)
        Verbose.note(h, decision.isAccepted ? "accepted" : "rejected \(decision.reason?.rawValue ?? "")")
        guard case .accepted(let verified) = decision else {
            Invariant.check(decision.reason != nil, h, "rejected without a reason")
            if decision.reason == .cborMalformed {
                Invariant.check((try? CBORDecoder().decode(object)) == nil, h, "cbor_malformed for a well-formed object")
            }
            return
        }
        guard let value = try? CBORDecoder().decode(object), let signature = value["signature"]?.bytesValue,
              let raw = value["authenticatorData"]?.bytesValue else { Invariant.fail(h, "accepted object lacks its fields") }
        guard let authData = try? AuthenticatorData(raw, kind: .assertion) else { Invariant.fail(h, "accepted authenticatorData does not parse") }
        Invariant.check(authData.rpIdHash == rpIdHash && rpIdHash.count == 32, h, "rpIdHash differs")
        Invariant.check(verified.counter == authData.counter && verified.flags == authData.flags, h, "reported counter/flags differ")
        if checkCounter { Invariant.check(authData.counter > previous, h, "counter \(authData.counter) accepted after \(previous)") }
        Invariant.check(key.verify(signature: signature, message: SHA256.hash(raw, clientDataHash)) == .valid, h, "signature does not verify over the nonce")
    }
}
