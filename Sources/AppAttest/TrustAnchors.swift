import AttestCrypto

/// The pinned trust anchors of the verifier: App Attest roots for x5c chains, and receipt roots for
/// the CMS signer chain of receipts. An input of the verifier, never read from disk or the system.
///
/// `TrustAnchors.apple` pins Apple's App Attestation Root CA and Apple Root CA - G3 (embedded).
/// Tests and simulators inject extra roots (e.g. a test CA) with `adding(appAttestRoots:)`.
/// Thread-safe: immutable; the underlying `X509TrustStore`s are shareable.
public struct TrustAnchors: Sendable {
    /// Anchors of attestation certificate chains.
    public let appAttestStore: X509TrustStore
    /// Anchors of receipt signer chains.
    public let receiptStore: X509TrustStore

    /// Anchors as given.
    ///
    /// X509_V_FLAG_X509_STRICT is set where Apple's real certificates pass it: on receipt signer
    /// chains (Apple Root CA - G3) always. Real App Attest credential certificates have no Authority
    /// Key Identifier, which strict mode refuses ("Missing Authority Key Identifier"), so attestation
    /// chains are verified without it unless `strictAppAttestChains` is true (e.g. for a test CA).
    public init(appAttestRoots: [X509Certificate], receiptRoots: [X509Certificate], strictAppAttestChains: Bool = false) throws {
        appAttestStore = try X509TrustStore(anchors: appAttestRoots, strict: strictAppAttestChains)
        receiptStore = try X509TrustStore(anchors: receiptRoots, strict: true)
    }

    /// Apple's production anchors (embedded App Attestation Root CA and Apple Root CA - G3).
    public static let apple: TrustAnchors = {
        guard let anchors = try? TrustAnchors(appAttestRoots: [AppleRootCertificates.appAttestRootCA],
                                              receiptRoots: [AppleRootCertificates.rootCAG3]) else {
            fatalError("cannot build the X509_STORE for Apple's roots (libcrypto out of memory)")
        }
        return anchors
    }()

    /// The App Attest roots.
    public var appAttestRoots: [X509Certificate] { appAttestStore.anchors }
    /// The receipt roots.
    public var receiptRoots: [X509Certificate] { receiptStore.anchors }

    /// These anchors plus extra App Attest roots (e.g. a test CA's root).
    public func adding(appAttestRoots extra: [X509Certificate]) throws -> TrustAnchors {
        try TrustAnchors(appAttestRoots: appAttestRoots + extra, receiptRoots: receiptRoots, strictAppAttestChains: appAttestStore.strict)
    }

    /// Anchors with `appAttestRoots` replacing Apple's App Attest root (receipt roots kept).
    public func replacing(appAttestRoots: [X509Certificate]) throws -> TrustAnchors {
        try TrustAnchors(appAttestRoots: appAttestRoots, receiptRoots: receiptRoots, strictAppAttestChains: appAttestStore.strict)
    }
}
