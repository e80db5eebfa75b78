import GatewayStore

/// `endpoints.fleet_attest_rate` (issue 12): at most `count` App Attest attestations per fixed window
/// of `windowMillis` across the fleet, counted in the store (`AttestStore.acquireFleetSlot`, counter
/// `attest`). The one home of the limit for both places where a device spends an attestation:
/// - an `attest` challenge (`GatewayEndpoints.challenge`): each lets a device call Apple's attestation
///   service once, so it is counted when issued;
/// - `POST {prefix}/register` with an `appAttest` attestation (`RegistrationEndpoint`): its challenge
///   has purpose `register`, which the device-key-only and assertion forms use too, so it cannot be
///   counted at issue; it is counted when the body arrives, before any verification. The
///   device-key-only and assertion forms spend no attestation and are never counted.
/// Over the limit: `429 attest_rate_limited` / `retry` with `Retry-After` (the rest of the window,
/// whole seconds, rounded up); a store failure: `503 store_unavailable`. A refused use changes
/// nothing else (no challenge consumed, no registration back-off).
struct FleetAttestRate: Sendable {
    /// Attestations per window, fleet-wide (>= 1).
    let count: Int
    /// The window, ms (>= 1).
    let windowMillis: Int64

    /// The store counter's name.
    static let counterName = "attest"

    /// Counts one attestation at `now` (unix ms). Completes with nil when within the limit, else the
    /// refusal to answer (429 over the limit, 503 when the store failed).
    func admit(store: any AttestStore, now: Int64, completion: @escaping @Sendable (Refusal?) -> Void) {
        store.acquireFleetSlot(FleetAttestRate.counterName, limit: count, windowMillis: windowMillis, now: now) { result in
            switch result {
            case .failure: completion(.storeUnavailable)
            case .success(.refused(let retryAfterMillis)): completion(.attestRateLimited(retryAfter: Int((retryAfterMillis + 999) / 1000)))
            case .success(.granted): completion(nil)
            }
        }
    }
}
