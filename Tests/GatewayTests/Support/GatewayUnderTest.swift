import Dispatch
import Foundation
import Gateway
import GatewayConfig
import GatewayStore

/// The gateway in-process: YAML -> `GatewayConfiguration.parse` -> `GatewayRuntime` -> `start()`,
/// listening on 127.0.0.1 port 0 (data and admin).
final class GatewayUnderTest: @unchecked Sendable {  // immutable after init
    let runtime: GatewayRuntime
    /// The bound data listener port.
    let port: UInt16
    /// The bound admin listener port.
    let adminPort: UInt16

    struct StartError: Error, CustomStringConvertible {
        let description: String
    }

    init(yaml: String, baseDirectory: String, clock: GatewayClock) throws {
        let loaded: LoadedConfiguration
        do {
            loaded = try GatewayConfiguration.parse(yaml: yaml, baseDirectory: baseDirectory)
        } catch {
            throw StartError(description: "configuration refused: \(error)\n\(yaml)")
        }
        runtime = try GatewayRuntime(loaded: loaded, clock: clock, loopCount: 2)
        let listeners = try runtime.start()
        guard let port = listeners.data.first?.port, port != 0, let adminPort = listeners.admin?.port, adminPort != 0 else {
            runtime.shutdown {}
            throw StartError(description: "no bound ports: \(listeners.data.map(\.address)) \(listeners.admin?.address ?? "-")")
        }
        self.port = port
        self.adminPort = adminPort
    }

    /// The store the runtime uses.
    var store: any AttestStore { runtime.store }

    /// Graceful stop; waits for it (at most 15 s).
    func stop() {
        let done = DispatchSemaphore(value: 0)
        runtime.shutdown { done.signal() }
        _ = done.wait(timeout: .now() + 15)
    }
}
