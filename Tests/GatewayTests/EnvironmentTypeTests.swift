import AppAttest
import GatewayConfig
import GatewayRules
import GatewayStore
import XCTest

/// One environment type from the configuration through the verifier's policy to the stored key record
/// (no conversions between per-module copies, which used to go through raw strings).
final class EnvironmentTypeTests: XCTestCase {
    func testConfigurationVerifierAndStoreShareTheTypes() throws {
        let yaml = """
            listen: 127.0.0.1:8080
            apps:
              - app_id: ABCDE12345.com.example.app
                environment: any
            upstreams:
              app: http://127.0.0.1:8081
            routes:
              - path_prefix: /
                upstream: app
                environment: development
            """
        let configuration = try GatewayConfiguration.parse(yaml: yaml, baseDirectory: "/tmp").configuration
        let app: EnvironmentPolicy = configuration.apps[0].environment
        let route: AppAttestEnvironment = try XCTUnwrap(configuration.routes[0].environment)
        XCTAssertEqual(app, .any)
        XCTAssertEqual(route, .development)

        let policy = AppPolicy(appId: configuration.apps[0].appID.description, environment: app)
        let record = try KeyRecord(keyId: try KeyID([UInt8](repeating: 7, count: 32)), publicKey: [0x04] + [UInt8](repeating: 1, count: 64),
                                   environment: route, appId: policy.appId, createdAt: 0)
        XCTAssertTrue(policy.environment.allows(record.environment))
        XCTAssertEqual(record.environment, AppAttestEnvironment(aaguid: Array("appattestdevelop".utf8)))
        XCTAssertFalse(EnvironmentPolicy.production.allows(record.environment))
    }
}
