import AttestClient
import Foundation
import XCTest

/// One app install against the fake gateway: fake App Attest, counting key factory, memory store,
/// fake clock; `relaunch()` makes a new client on the same store (a new process).
final class SDKHarness: @unchecked Sendable {  // test-thread setup; the parts lock themselves
    let clock = FakeClock()
    let gateway: FakeGateway
    let appAttest = FakeAppAttestService()
    let keys = CountingKeyFactory()
    let store = MemoryAttestationStore()
    var jitter: Double = 0
    var mode: AttestClientConfiguration.Mode = .automatic
    var configure: (inout AttestClientConfiguration) -> Void = { _ in }
    private(set) var client: AttestClient!

    init(appAttest supported: Bool = true, nextChallenges: Bool = false) {
        gateway = FakeGateway(clock: clock)
        gateway.nextChallenges = nextChallenges
        appAttest.supported = supported
        relaunch()
    }

    @discardableResult
    func relaunch() -> AttestClient {
        var configuration = AttestClientConfiguration(gateway: URL(string: "https://gateway.test")!)
        configuration.mode = mode
        configuration.automaticRenewal = false
        configure(&configuration)
        let jitterValue = jitter
        client = AttestClient(configuration: configuration, appAttest: appAttest, deviceKeys: keys, store: store, transport: gateway,
                              clock: clock, jitter: { jitterValue })
        return client
    }

    /// A POST to `/v1/orders?n=…` with a JSON body.
    static func order(_ n: Int) -> ProtectedRequest {
        ProtectedRequest(method: "POST", target: "/v1/orders?n=\(n)", headers: [("Content-Type", "application/json")],
                         body: Data("{\"n\":\(n)}".utf8))
    }
}
