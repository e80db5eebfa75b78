import Foundation
import GatewayRules
import GatewayStore

/// Which key records `attestctl keys list` and bulk `keys revoke` select: `--app` (exact App ID),
/// `--environment` (`development` | `production`), `--status` (`active` | `revoked`),
/// `--created-after T` (createdAt >= T) and `--created-before T` (createdAt < T), T in unix
/// milliseconds or RFC 3339 (`2026-05-01T00:00:00Z`), `--risk-state` (`fresh` | `stale` | `stopped` |
/// `unknown`). Absent options match everything.
struct KeyFilter {
    static let options: Set<String> = ["app", "environment", "status", "created-after", "created-before", "risk-state"]

    var app: String?
    var environment: AppAttestEnvironment?
    var status: KeyStatus?
    var createdAfter: Int64?
    var createdBefore: Int64?
    /// The fraud metric's state (`fresh`, `stale`, `stopped`, or `unknown`: never fetched): e.g. the
    /// keys whose receipt refreshes a data server's 400/401 stopped, to force them again one by one
    /// with `attestctl risk refresh` once the credentials are fixed.
    var riskState: RiskMetricState??

    /// Reads the filter options. - Throws: `DeviceCommandError.usage` for bad values.
    init(_ options: DeviceCommandOptions) throws {
        app = try options.value("app")
        if let text = try options.value("environment") {
            guard let value = AppAttestEnvironment(rawValue: text) else {
                throw DeviceCommandError.usage("--environment must be development or production, got \(text)")
            }
            environment = value
        }
        if let text = try options.value("status") {
            guard let value = KeyStatus(rawValue: text) else { throw DeviceCommandError.usage("--status must be active or revoked, got \(text)") }
            status = value
        }
        createdAfter = try KeyFilter.time(options, "created-after")
        createdBefore = try KeyFilter.time(options, "created-before")
        if let text = try options.value("risk-state") {
            if text == "unknown" {
                riskState = .some(nil)
            } else {
                guard let value = RiskMetricState(rawValue: text) else {
                    throw DeviceCommandError.usage("--risk-state must be fresh, stale, stopped or unknown, got \(text)")
                }
                riskState = .some(value)
            }
        }
    }

    /// Whether any option narrows the selection.
    var isEmpty: Bool { app == nil && environment == nil && status == nil && createdAfter == nil && createdBefore == nil && riskState == nil }

    /// Whether `record` is selected.
    func matches(_ record: KeyRecord) -> Bool {
        if let app, record.appId != app { return false }
        if let environment, record.environment != environment { return false }
        if let status, record.status != status { return false }
        if let createdAfter, record.createdAt < createdAfter { return false }
        if let createdBefore, record.createdAt >= createdBefore { return false }
        if let riskState, record.riskState != riskState { return false }
        return true
    }

    private static func time(_ options: DeviceCommandOptions, _ name: String) throws -> Int64? {
        guard let text = try options.value(name) else { return nil }
        if let millis = Int64(text), millis >= 0 { return millis }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        if let date = formatter.date(from: text) { return Int64(date.timeIntervalSince1970 * 1000) }
        throw DeviceCommandError.usage("--\(name) must be unix milliseconds or RFC 3339 (2026-05-01T00:00:00Z), got \(text)")
    }
}
