import AppAttest
import GatewayStore

/// Which lifecycle endpoint a request reached: `POST {prefix}/renew` or `POST {prefix}/forget`.
enum KeyLifecycleAction: Sendable, Equatable {
    case renew, forget

    /// The challenge purpose it spends.
    var purpose: ChallengePurpose { self == .renew ? .renew : .forget }
    /// The framing label of its client data.
    var clientData: LifecycleClientData.Action { self == .renew ? .renew : .forget }
    /// The route name in logs and metrics.
    var route: String { self == .renew ? "endpoint:renew" : "endpoint:forget" }
}
