import Foundation

/// A gateway answer read as DESIGN.md section 2 describes refusals and the endpoints' JSON.
struct GatewayAnswer {
    let response: TransportResponse
    /// The JSON object of the body, when it is one.
    let json: [String: Any]?

    init(_ response: TransportResponse) {
        self.response = response
        json = (try? JSONSerialization.jsonObject(with: response.body)) as? [String: Any]
    }

    var status: Int { response.status }

    /// The refusal code: `App-Attest-Error`, else the body's `error` (nil for answers that are not refusals).
    func refusalCode(errorHeader: String) -> String? {
        if let header = response.header(errorHeader), !header.isEmpty { return header }
        guard response.status >= 400, let code = string("error"), action != nil else { return nil }
        return code
    }

    /// The refusal's `action`.
    var action: String? { string("action") }

    /// A fresh challenge carried by a challenge refusal or a challenge answer.
    var challenge: (bytes: Data, expiresAt: Double)? {
        guard let text = string("challenge"), let bytes = Base64Text.decode(text), !bytes.isEmpty else { return nil }
        return (bytes, number("expiresAt") ?? 0)
    }

    func string(_ name: String) -> String? { json?[name] as? String }

    /// A JSON number as Double (integers too).
    func number(_ name: String) -> Double? {
        switch json?[name] {
        case let value as Int: return Double(value)
        case let value as Double: return value
        case let value as NSNumber: return value.doubleValue
        default: return nil
        }
    }

    /// A field the SDK cannot use: the answer is malformed (a hostile or broken gateway).
    struct MalformedField: Error, CustomStringConvertible {
        /// The field's name, e.g. `expiresAt`.
        let name: String
        var description: String { "the gateway's \(name) is not a usable time" }
    }

    /// The largest magnitude accepted for whole seconds: 2^53, the integers a JSON number holds exactly.
    static let largestSeconds: Double = 9_007_199_254_740_992

    /// `value` as whole seconds (rounded down); nil when it is not finite or beyond ±2^53, so that no
    /// conversion to `Int` can trap.
    static func wholeSeconds(_ value: Double) -> Int? {
        guard value.isFinite, abs(value) <= largestSeconds else { return nil }
        return Int(exactly: value.rounded(.down))
    }

    /// `name` as whole seconds (unix time), rounded down; nil when absent or `null`.
    /// - Throws: `MalformedField` when present but not a number within ±2^53 (`1e300`, a string...).
    func seconds(_ name: String) throws -> Int? {
        guard let raw = json?[name], !(raw is NSNull) else { return nil }
        guard let value = number(name), let seconds = Self.wholeSeconds(value) else { throw MalformedField(name: name) }
        return seconds
    }

    func bool(_ name: String) -> Bool? {
        switch json?[name] {
        case let value as Bool: return value
        case let value as NSNumber: return value.boolValue
        default: return nil
        }
    }

    /// `integrity` as the gateway sends it: an array of codes or one comma-separated string.
    var integrity: String? {
        if let list = json?["integrity"] as? [Any] {
            let codes = list.compactMap { $0 as? String }
            return codes.isEmpty ? nil : codes.joined(separator: ",")
        }
        return string("integrity").flatMap { $0.isEmpty ? nil : $0 }
    }

    /// `error` and `detail` for `Attestation.detail`.
    func describe(_ what: String) -> String {
        var text = "\(what): HTTP \(response.status)"
        if let code = string("error") { text += " \(code)" }
        if let detail = string("detail") { text += " (\(detail))" }
        return text
    }
}
