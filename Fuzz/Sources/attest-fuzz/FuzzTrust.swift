// The TEST CA of Fuzz/testca (made with `attestctl ca --out Fuzz/testca`): its root is pinned next to
// Apple's roots so that seeds minted by the simulator verify deep. Test material only, never Apple's.
import AppAttest
import AttestCrypto

enum FuzzTrust {
    /// Fuzz/testca/root.pem.
    static let testRootPEM = """
        -----BEGIN CERTIFICATE-----
        MIICRjCCAc2gAwIBAgIQTUjT1GoQAc9wf78xaRTbezAKBggqhkjOPQQDAzBlMSUw
        IwYDVQQDDBxURVNUIEFwcCBBdHRlc3RhdGlvbiBSb290IENBMScwJQYDVQQKDB5U
        RVNUIEFwcCBBdHRlc3QgQ0EgKG5vdCBBcHBsZSkxEzARBgNVBAgMCkNhbGlmb3Ju
        aWEwHhcNMjAwMTAxMDAwMDAwWhcNNDUwMTAxMDAwMDAwWjBlMSUwIwYDVQQDDBxU
        RVNUIEFwcCBBdHRlc3RhdGlvbiBSb290IENBMScwJQYDVQQKDB5URVNUIEFwcCBB
        dHRlc3QgQ0EgKG5vdCBBcHBsZSkxEzARBgNVBAgMCkNhbGlmb3JuaWEwdjAQBgcq
        hkjOPQIBBgUrgQQAIgNiAATn5kCA0CdT8C0QvQTVk4p7FgEfiwAjZt3bP+CG4Q67
        71kt1FCXpyR7rabWeifWEE1kfh2UcfjMjvtzBaNLmPFovFuiI22EbFXRKVRWUZBB
        3poXtnPUzB+0oIVegwHUGbOjQjBAMA8GA1UdEwEB/wQFMAMBAf8wHQYDVR0OBBYE
        FCVWWZB997X6mqriWaW7GtZB5mpWMA4GA1UdDwEB/wQEAwIBBjAKBggqhkjOPQQD
        AwNnADBkAjA2u7Etb0KCxgIk9jCY6I6PtIY6ub9h5iZpri6Gah+BN8JpWDeWK9H2
        x3NMCLFcoAwCMAvLNb3tTQ6Gu82zvDWGVhRL762QRuGZNZhv/LtuXyPXPlYaNCqt
        9K/wEzzqrdtK5w==
        -----END CERTIFICATE-----
        """

    /// The test root certificate.
    static let testRoot: X509Certificate = {
        guard let root = try? X509Certificate(pem: testRootPEM) else { fatalError("Fuzz/testca root does not parse") }
        return root
    }()

    /// Apple's anchors plus the test root for attestation chains (Apple Root CA - G3 for receipts).
    static let attestation: TrustAnchors = {
        guard let anchors = try? TrustAnchors.apple.adding(appAttestRoots: [testRoot]) else { fatalError("cannot build trust anchors") }
        return anchors
    }()

    /// The test root as the receipt anchor (so synthetic receipts signed under the test CA get through
    /// the signer chain check too).
    static let testReceipts: TrustAnchors = {
        guard let anchors = try? TrustAnchors(appAttestRoots: [testRoot], receiptRoots: [testRoot]) else { fatalError("cannot build trust anchors") }
        return anchors
    }()
}
