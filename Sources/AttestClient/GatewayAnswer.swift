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
