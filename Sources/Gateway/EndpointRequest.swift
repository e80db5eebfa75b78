import Foundation

/// The JSON body of a gateway endpoint request: one flat object whose members are strings
/// (`{"keyId": "...", "purpose": "attest"}`). Anything else is refused with a message naming the
/// problem. Endpoint bodies are small (the endpoint body limit is 64 KiB) and not on the assertion
/// path, so Foundation's parser is used here.
struct EndpointRequest {
    private let members: [String: String]

    /// Parses `body`.
    /// - Throws: `Refusal.jsonInvalid` with the reason.
    init(body: [UInt8]) throws(EndpointRequestError) {
        guard !body.isEmpty else { throw EndpointRequestError("empty body: expected a JSON object") }
        guard JSONMemberCount.isUTF8WithoutBOM(body) else {
            throw EndpointRequestError("the body must be UTF-8 without a byte order mark (RFC 8259 section 8.1)")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            throw EndpointRequestError("the body is not valid JSON")
        }
        guard let dict = object as? [String: Any] else { throw EndpointRequestError("expected a JSON object") }
        guard !JSONMemberCount.repeatsAName(body, parsed: dict) else {
            throw EndpointRequestError("a member appears twice: send each name once")
        }
        var members: [String: String] = [:]
        for (key, value) in dict {
            guard let text = value as? String else { throw EndpointRequestError("\"\(key)\" must be a string") }
            members[key] = text
        }
        self.members = members
    }

    /// The string member `name`.
    /// - Throws: when it is absent.
    func required(_ name: String) throws(EndpointRequestError) -> String {
        guard let value = members[name] else { throw EndpointRequestError("missing \"\(name)\"") }
        return value
    }

    /// The string member `name`, or nil.
    func optional(_ name: String) -> String? { members[name] }
}

/// Why an endpoint body was refused (rendered as 400 `json_invalid`).
struct EndpointRequestError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
