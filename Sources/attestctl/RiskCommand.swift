import AppAttest
import Foundation
import Gateway
import GatewayConfig
import GatewayStore

/// `attestctl risk refresh --key-id B64 --config gateway.yaml`: forces one exchange of the key's
/// receipt with Apple's App Attest data server (issue 12), with the gateway configuration's store,
/// the app's `risk` credentials and trust. Prints one JSON object: keyId, outcome
/// (`ReceiptRefreshReport.Outcome`), status, riskMetric, nextAt (unix ms), detail.
///
/// Exit codes: 0 refreshed / not_modified; 1 any other outcome (rejected, not_found, throttled,
/// unreachable, invalid_receipt, lease_held, skipped); 2 usage or configuration (also a `memory`
/// store: its keys live inside the gateway's process, out of reach); 3 store_unavailable (as
/// `attestctl keys`: a script retries it).
///
/// Keys whose refreshes a 400/401 stopped (a wrong `team_id`, `key_id` or `.p8` stops every key it
/// touched) are found with `attestctl keys list --risk-state stopped STORE` and forced again one by
/// one with this command once the credentials are fixed.
enum RiskCommand {
    static let usage = "attestctl risk refresh --key-id B64 --config gateway.yaml"

    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.first == "refresh" else {
            FileHandle.standardError.write(Data("usage: \(usage)\n".utf8))
            return arguments.first.map { ["-h", "--help", "help"].contains($0) } == true ? 0 : 2
        }
        var keyText: String?
        var configPath: String?
        var index = 1
        while index < arguments.count {
            let option = arguments[index]
            guard index + 1 < arguments.count else { return fail("\(option) needs a value") }
            switch option {
            case "--key-id": keyText = arguments[index + 1]
            case "--config": configPath = arguments[index + 1]
            default: return fail("unknown option \(option)")
            }
            index += 2
        }
        guard let keyText, let bytes = Base64.decode(keyText), let keyId = try? KeyID(bytes) else {
            return fail("--key-id must be base64 of 32 bytes")
        }
        guard let configPath else { return fail("--config is required") }
        let loaded: LoadedConfiguration
        do { loaded = try GatewayConfiguration.load(path: configPath) } catch {
            return fail("\(configPath): \(error)")
        }
        if case .memory = loaded.configuration.store.kind {
            return fail("\(configPath): the store is memory: its keys live inside the running gateway's process, out of attestctl's reach")
        }
        let report: ReceiptRefreshReport
        do { report = try ReceiptRefreshOnce.run(loaded: loaded, keyId: keyId) } catch {
            return fail("\(error)")
        }
        let json: JSONText = .object([
            ("keyId", .string(Base64.encode(keyId.bytes))),
            ("outcome", .string(report.outcome.rawValue)),
            ("status", report.status.map { .integer(Int64($0)) } ?? .null),
            ("riskMetric", report.riskMetric.map { .integer(Int64($0)) } ?? .null),
            ("nextAt", report.nextAt.map { .integer($0) } ?? .null),
            ("detail", .string(report.detail)),
        ])
        print(json.rendered)
        switch report.outcome {
        case .refreshed, .notModified: return 0
        case .storeUnavailable: return 3
        default: return 1
        }
    }

    private static func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("attestctl risk: \(message)\nusage: \(usage)\n".utf8))
        return 2
    }
}
