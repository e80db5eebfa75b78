import AppAttest
import GatewayStore

/// The one home of "what the gateway stores of a key Apple attested": `POST {prefix}/attest`
/// (`GatewayEndpoints`) and the App Attest key of `POST {prefix}/register`'s attestation form
/// (`RegistrationEndpoint`) write the same record shape.
extension KeyRecord {
    /// The record of an App Attest key the gateway verified (DESIGN.md section 3: public key,
    /// receipt, environment, app, time; the counter the attestation left, 0): trust tier
    /// `app_attest` (reads as `attested`), no backing, no integrity codes.
    /// - Parameters:
    ///   - createdAt: unix ms.
    ///   - expiresAt: the app's `registration_ttl` from `createdAt` (unix ms), nil without one.
    ///   - accountHash: the account header's keyed hash when the app counts keys per account.
    /// - Throws: `StoreInputError` when the App ID is not storable (the verifier only accepts
    ///   configured App IDs, which are).
    init(attested key: AttestedKey, createdAt: Int64, expiresAt: Int64?, accountHash: AccountHash?) throws {
        let receipt = key.receiptVerification?.receipt
        try self.init(keyId: try KeyID(key.keyId), publicKey: key.publicKeyPoint, counter: key.counter,
                      environment: key.environment, appId: key.appId, createdAt: createdAt, receipt: key.receipt,
                      receiptRiskMetric: receipt?.riskMetric.flatMap { UInt32(exactly: $0) },
                      receiptExpiresAt: receipt?.expirationTime.map { $0 * 1000 },
                      expiresAt: expiresAt, accountHash: accountHash)
    }
}
