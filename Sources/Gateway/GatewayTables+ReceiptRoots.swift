import AppAttest
import AttestCrypto
import Foundation
import GatewayConfig

extension GatewayTables {
    /// `anchors` plus the receipt roots of `trust.extra_receipt_roots` (test receipt CAs).
    /// - Throws: `GatewayStartupError` naming the key when a file cannot be read or holds no certificate.
    static func addingReceiptRoots(_ trust: TrustConfiguration, to anchors: TrustAnchors) throws -> TrustAnchors {
        guard !trust.extraReceiptRoots.isEmpty else { return anchors }
        var roots: [X509Certificate] = []
        for path in trust.extraReceiptRoots {
            do { roots += try trustRoots(inFile: path) } catch {
                throw GatewayStartupError("trust.extra_receipt_roots: \(error.description)")
            }
        }
        return try anchors.adding(receiptRoots: roots)
    }

    /// The certificates of a PEM root file (`trust.extra_roots[N]`, `trust.extra_receipt_roots[N]`),
    /// as start, reload and `check-config` read it (`TLSFileChecker`, `.trustRoots`): one rule, so
    /// that `check-config` never passes a file the gateway then refuses.
    /// - Throws: `GatewayStartupError` when the file cannot be read or a block is not a certificate.
    static func trustRoots(inFile path: String) throws(GatewayStartupError) -> [X509Certificate] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw GatewayStartupError("cannot read \(path)")
        }
        do {
            let certificates = try X509Certificate.parseAll(pem: text)
            guard !certificates.isEmpty else { throw CryptoError.invalidEncoding("no certificate") }
            return certificates
        } catch {
            throw GatewayStartupError("\(path) holds no usable PEM certificate (\(error))")
        }
    }
}
