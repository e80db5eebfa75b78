import AppAttest
import Dispatch
import GatewayConfig
import GatewayIO
import GatewayStore

/// One forced exchange of a key's receipt with Apple's data server, outside a running gateway
/// (`attestctl risk refresh --key-id`): the configuration's store, the key's app `risk` settings and
/// trust, one event loop; the key's lease is taken like a gateway would (so a running fleet does not
/// exchange it at the same time), and a key whose refreshes were stopped is exchanged anyway.
public enum ReceiptRefreshOnce {
    /// Runs the exchange and waits for it (at most `ReceiptRefresher.exchangeTimeout` plus 15 s).
    /// - Throws: `GatewayStartupError` when the configuration has no app with `risk`, a key or CA
    ///   cannot be used, or the store cannot be created; or when nothing answered in time.
    public static func run(loaded: LoadedConfiguration, keyId: KeyID, clock: GatewayClock = .system) throws -> ReceiptRefreshReport {
        let config = loaded.configuration
        let group = EventLoopGroup(loopCount: 1)
        defer { group.shutdown() }
        let store = try GatewayRuntime.makeStore(config.store, loops: group.loops)
        defer { store.close() }
        guard let refresher = try ReceiptRefresher.make(
            config: config, store: store, trust: try GatewayTables.addingReceiptRoots(config.trust, to: TrustAnchors.apple),
            loop: group.loops[0], clock: clock, events: { _, _ in }) else {
            throw GatewayStartupError("apps: no app has risk settings (team_id, key_id, private_key_file)")
        }
        let box = ReportBox()
        let done = DispatchSemaphore(value: 0)
        refresher.refresh(keyId, forced: true) { report in
            box.set(report)
            done.signal()
        }
        guard done.wait(timeout: .now() + ReceiptRefresher.exchangeTimeout + 15) == .success, let report = box.get() else {
            throw GatewayStartupError("risk refresh: no answer within \(Int(ReceiptRefresher.exchangeTimeout) + 15) s")
        }
        return report
    }

    private final class ReportBox: @unchecked Sendable {  // guarded by `lock`
        private let lock = DispatchSemaphore(value: 1)
        private var value: ReceiptRefreshReport?
        func set(_ report: ReceiptRefreshReport) { lock.wait(); value = report; lock.signal() }
        func get() -> ReceiptRefreshReport? { lock.wait(); defer { lock.signal() }; return value }
    }
}
