import GatewayRules

/// The stored registration of one attested key (DESIGN.md section 4), written once by `registerKey`
/// and then only changed by `commitAssertion` (counter and anti-replay window), `revokeKey` (status) and
/// `KeyLifecycleStore.renewKey` (expiry, counter and window) and the receipt refresher
/// (`ReceiptRefreshStore`: receipt, risk metric, its age and state), and deleted by `forgetKey` or
/// `deleteKey`.
///
/// Times are unix milliseconds (`Int64`). Redis form: hash `aa:{<keyId b64url>}:key`, fields listed in
/// `GatewayRedis.RedisKeySchema`.
public struct KeyRecord: Equatable, Sendable {
    /// The key's identifier (SHA-256 of `publicKey`).
    public let keyId: KeyID
    /// The 65-byte X9.63 uncompressed P-256 point (0x04 || X || Y) from the attestation's leaf
    /// certificate (Apple attestation step 5).
    public let publicKey: [UInt8]
    /// The highest assertion counter accepted so far (the attestation's counter, 0, at registration).
    public internal(set) var counter: UInt32
    /// Anti-replay state below `counter` (see `ReplayWindow`); empty at registration.
    public internal(set) var replayWindow: ReplayWindow
    /// Environment from the aaguid.
    public let environment: AppAttestEnvironment
    /// The App ID the key was attested for (`<team id>.<bundle id>`), 1...255 printable ASCII bytes.
    public let appId: String
    /// When the key was registered, unix milliseconds.
    public let createdAt: Int64
    /// The App Attest receipt from the attestation statement (CMS, BER), if any.
    public internal(set) var receipt: [UInt8]?
    /// The receipt's risk metric (refreshed receipts only), if known.
    public internal(set) var receiptRiskMetric: UInt32?
    /// The receipt's expiry, unix milliseconds, if known.
    public internal(set) var receiptExpiresAt: Int64?
    /// `active` or `revoked`.
    public internal(set) var status: KeyStatus
    /// How the key was established (`TrustTier`: `attested`, `device`, legacy `app_attest`).
    public let trustTier: TrustTier
    /// When the registration stops being valid, unix milliseconds; nil = never. Once `now >= expiresAt`
    /// `commitAssertion` refuses with `key_expired` (the client re-attests with a new key).
    public internal(set) var expiresAt: Int64?
    /// The keyed hash (HMAC-SHA256 with the app's account key) of the account the key was registered
    /// for, when the app counts keys per account; never the account value itself. Redis field `acct`.
    public let accountHash: AccountHash?
    /// Where a device key lives (`POST {prefix}/register`); nil for a key attested through
    /// `POST {prefix}/attest` (an App Attest key). Only records with a backing sign requests with
    /// `App-Attest-Signature`.
    public let backing: DeviceKeyBacking?
    /// Integrity codes the client reported at registration (`GatewayRules.IntegrityCodes` shape),
    /// in the order sent; empty for App Attest keys.
    public let integrity: [String]
    /// Whether Apple App Attest vouched for this key (an attestation, or a registration that carried
    /// an App Attest attestation or assertion). Defaults from the tier when not given.
    public let platformAttested: Bool
    /// Creation time (unix ms) of the refreshed receipt whose metric `receiptRiskMetric` holds; nil
    /// until the first exchange with Apple's data server succeeded (Redis field `riskat`).
    public var riskObservedAt: Int64? = nil
    /// Where the fraud metric stands (Redis field `riskst`); nil until the first exchange.
    public var riskState: RiskMetricState? = nil

    /// Builds a record for `registerKey`.
    /// - Parameters:
    ///   - counter: the attestation's counter (0 for a real App Attest attestation).
    /// - Throws: `StoreInputError.publicKey` unless `publicKey` is 65 bytes starting with 0x04;
    ///   `StoreInputError.appId` unless `appId` is 1...255 bytes of printable ASCII (0x21...0x7e);
    ///   `StoreInputError.integrity` unless `integrity` has the `IntegrityCodes` shape.
    public init(keyId: KeyID, publicKey: [UInt8], counter: UInt32 = 0, environment: AppAttestEnvironment,
                appId: String, createdAt: Int64, receipt: [UInt8]? = nil, receiptRiskMetric: UInt32? = nil,
                receiptExpiresAt: Int64? = nil, status: KeyStatus = .active, trustTier: TrustTier = .appAttest,
                expiresAt: Int64? = nil, replayWindow: ReplayWindow = ReplayWindow(),
                accountHash: AccountHash? = nil, backing: DeviceKeyBacking? = nil, integrity: [String] = [],
                platformAttested: Bool? = nil) throws {
        guard publicKey.count == 65, publicKey.first == 0x04 else { throw StoreInputError.publicKey(publicKey.count) }
        guard KeyRecord.isValidAppId(appId) else { throw StoreInputError.appId }
        if let problem = IntegrityCodes.problem(integrity) { throw StoreInputError.integrity(problem) }
        self.backing = backing
        self.integrity = integrity
        self.platformAttested = platformAttested ?? (trustTier.effective == .attested)
        self.keyId = keyId
        self.publicKey = publicKey
        self.counter = counter
        self.replayWindow = replayWindow
        self.environment = environment
        self.appId = appId
        self.createdAt = createdAt
        self.receipt = receipt
        self.receiptRiskMetric = receiptRiskMetric
        self.receiptExpiresAt = receiptExpiresAt
        self.status = status
        self.trustTier = trustTier
        self.expiresAt = expiresAt
        self.accountHash = accountHash
    }

    /// Whether `appId` is 1...255 bytes of printable ASCII without spaces.
    public static func isValidAppId(_ appId: String) -> Bool {
        let utf8 = appId.utf8
        return (1...255).contains(utf8.count) && utf8.allSatisfy { $0 >= 0x21 && $0 <= 0x7e }
    }

    /// The fields `commitAssertion` reports back on success.
    public var committedFields: CommittedAssertion {
        CommittedAssertion(counter: counter, risk: risk)
    }

    /// The fraud metric with its age and state (what `commitAssertion` reports).
    public var risk: RiskSnapshot {
        RiskSnapshot(metric: receiptRiskMetric, observedAt: riskObservedAt, state: riskState, receiptExpiresAt: receiptExpiresAt)
    }
}
