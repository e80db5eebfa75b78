import AttestCrypto

extension TrustAnchors {
    /// These anchors plus extra receipt roots (e.g. a test receipt CA's root, gateway
    /// `trust.extra_receipt_roots`); the App Attest roots are kept.
    public func adding(receiptRoots extra: [X509Certificate]) throws -> TrustAnchors {
        try TrustAnchors(appAttestRoots: appAttestRoots, receiptRoots: receiptRoots + extra,
                         strictAppAttestChains: appAttestStore.strict)
    }
}
