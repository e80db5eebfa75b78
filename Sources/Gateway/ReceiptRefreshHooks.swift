import GatewayStore

/// How the request paths tell the receipt refresher about keys (issue 12), without waiting for it:
/// a key just attested (`registered`: its first exchange is due now), and a key seen on a request
/// whose metric was never fetched (`unfetched`: scheduled now unless already scheduled, so keys
/// attested before `risk` was configured get refreshed too). Both only queue a store write.
struct ReceiptRefreshHooks: Sendable {
    /// keyId, App ID of a key the attestation endpoint just registered.
    let registered: @Sendable (KeyID, String) -> Void
    /// keyId, App ID of a key whose committed assertion showed no fetched metric.
    let unfetched: @Sendable (KeyID, String) -> Void
    /// The App IDs whose receipts the running refresher exchanges (the apps with `risk` when the
    /// process started): only their requests carry risk headers and meet `max_risk_metric`, whatever a
    /// reload says (`apps[N].risk` is restart-only).
    let appIds: Set<String>

    init(_ refresher: ReceiptRefresher) {
        appIds = refresher.appIds
        registered = { keyId, appId in refresher.registered(keyId, appId: appId) }
        unfetched = { keyId, appId in refresher.noticed(keyId, appId: appId) }
    }
}
