/// The payload of a receipt that `TestReceiptCA` mints (Apple: "Assessing fraud risk", receipt
/// fields). Times are seconds since the epoch, written as ISO 8601 text like Apple's.
public struct ReceiptFields: Sendable, Equatable {
    /// Field 2: `<team id>.<bundle id>`.
    public var appId: String
    /// Field 3: DER of the attested key's credential certificate.
    public var attestedCertificate: [UInt8]
    /// Field 4: client hash (the clientDataHash in ATTEST receipts; other bytes in refreshed ones).
    public var clientHash: [UInt8]
    /// Field 5: opaque token.
    public var token: String
    /// Field 6: `ATTEST` (from an attestation) or `RECEIPT` (refreshed by Apple's data server).
    public var type: String
    /// Field 7: `sandbox` for the development environment; nil (absent) for production.
    public var environment: String?
    /// Field 12: creation time.
    public var creationTime: Int64
    /// Field 17: risk metric (refreshed receipts); nil leaves the field out.
    public var riskMetric: Int?
    /// Field 19: not-before time (earliest refresh).
    public var notBefore: Int64
    /// Field 21: expiration time.
    public var expirationTime: Int64

    /// Fields with Apple's usual spacing: not-before one day after creation, expiry 90 days after it.
    public init(appId: String, attestedCertificate: [UInt8], clientHash: [UInt8] = [UInt8](repeating: 0, count: 32),
                token: String = "test-token", type: String = "RECEIPT", environment: String? = nil,
                creationTime: Int64, riskMetric: Int? = nil, notBefore: Int64? = nil, expirationTime: Int64? = nil) {
        self.appId = appId
        self.attestedCertificate = attestedCertificate
        self.clientHash = clientHash
        self.token = token
        self.type = type
        self.environment = environment
        self.creationTime = creationTime
        self.riskMetric = riskMetric
        self.notBefore = notBefore ?? creationTime + 86_400
        self.expirationTime = expirationTime ?? creationTime + 90 * 86_400
    }
}
