import AppAttest
import GatewayHTTP

/// The next challenge on the answers of `enforce` and `monitor` routes (DESIGN.md section 9, "Next
/// challenge"; issue 11, "One round trip"): `App-Attest-Next-Challenge` (the challenge, standard
/// base64, padded) and `App-Attest-Next-Challenge-Expires` (its expiry, unix seconds), so that a
/// client signs its next protected request without asking `{prefix}/challenge` first.
///
/// The names are fixed (the client SDK reads them; they do not follow `headers.prefix`). Every field
/// of an upstream response whose name starts with `App-Attest-` (any case, every copy: the next
/// challenge, and `App-Attest-Error`, which the SDK takes for a gateway refusal) is dropped on every
/// route before the gateway sets its own, so a client never takes an upstream's field for the
/// gateway's: a challenge it did not issue, or a refusal that makes the app re-attest.
enum NextChallengeHeaders {
    /// `App-Attest-Next-Challenge`: the challenge, standard base64.
    static let challengeName = "App-Attest-Next-Challenge"
    /// `App-Attest-Next-Challenge-Expires`: unix seconds.
    static let expiresName = "App-Attest-Next-Challenge-Expires"

    /// Removes every upstream copy (names starting with `App-Attest-Next-Challenge`), then adds
    /// `issued` when there is one.
    static func set(_ issued: ChallengeIssuer.Issued?, on headers: inout HTTPHeaders) {
        headers.removeAll(namePrefix: challengeName)
        guard let issued else { return }
        headers.reserveAdditional(fields: 2, bytes: 96)  // one copy of a shared head, no regrowth
        try? headers.add(name: challengeName, value: Base64.encode(issued.bytes))
        try? headers.add(name: expiresName, value: String(issued.expiresAt))
    }

    /// The namespace of the fields the gateway answers clients with (fixed, as the SDK reads it).
    static let responseFamily = "App-Attest-"

    /// Drops every upstream field of `responseFamily`. One shared closure (nothing allocated per
    /// request); forwards use `HeaderFamily.dropUpstreamCopies`, which adds a `headers.error` named
    /// outside the family.
    static let dropUpstreamCopies: @Sendable (inout HTTPResponseHead) -> Void = { head in
        head.headers.removeAll(namePrefix: responseFamily)
    }

    /// The response-head edit of a forward whose answer carries `issued` (the upstream fields
    /// `family.dropUpstreamCopies` drops are dropped first); `family.dropUpstreamCopies` when there
    /// is none.
    static func filter(_ issued: ChallengeIssuer.Issued?, family: HeaderFamily) -> @Sendable (inout HTTPResponseHead) -> Void {
        let drop = family.dropUpstreamCopies
        guard let issued else { return drop }
        return { head in
            drop(&head)
            set(issued, on: &head.headers)
        }
    }
}
