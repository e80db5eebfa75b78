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
            guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
                throw GatewayStartupError("trust.extra_receipt_roots: cannot read \(path)")
            }
            do { roots += try X509Certificate.parseAll(pem: text) } catch {
                throw GatewayStartupError("trust.extra_receipt_roots: \(path) holds no usable PEM certificate (\(error))")
            }
        }
        return try anchors.adding(receiptRoots: roots)
    }
}
