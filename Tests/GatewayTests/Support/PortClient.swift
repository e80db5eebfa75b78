import Foundation

/// A `GatewayClient` for a gateway known by its port only.
struct PortClient: GatewayClient {
    let port: UInt16
    let work: URL
    let cas: TestCAs
}
