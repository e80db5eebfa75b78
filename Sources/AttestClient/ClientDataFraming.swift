import Foundation

/// The client data the SDK signs, byte-identical to what the gateway rebuilds (DESIGN.md sections 1
/// and 8): fields framed as a 4-byte big-endian length followed by the bytes.
///
/// - binding v1 (protected requests): challenge (raw), method, request-target (path and query
///   exactly as sent), SHA-256 of the body (32 bytes; of zero bytes when there is none), then each
///   bound header as `name:value`.
/// - registration: `"register-v1"`, challenge, publicKey (65 bytes), backing, integrity codes joined by `,`.
/// - renew / forget: `"renew-v1"` or `"forget-v1"`, challenge, keyId (32 bytes).
public enum ClientDataFraming {
    /// The fields framed in order.
    public static func framed(_ fields: [Data]) -> Data {
        var out = Data()
        out.reserveCapacity(fields.reduce(0) { $0 + 4 + $1.count })
        for field in fields {
            let length = UInt32(truncatingIfNeeded: field.count)
            out.append(contentsOf: [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
            out.append(field)
        }
        return out
    }

    /// Binding v1 of a protected request.
    /// - Parameters:
    ///   - challenge: the decoded challenge bytes.
    ///   - method: the method as on the request line, e.g. `POST`.
    ///   - target: path and query exactly as sent.
    ///   - body: the body (empty for none); its SHA-256 is what is framed.
    ///   - boundFields: extra bound header fields, `(name, value)` in the route's order (names verbatim).
    public static func bindingV1(challenge: Data, method: String, target: String, body: Data,
                                 boundFields: [(name: String, value: String)] = []) -> Data {
        framed([challenge, Data(method.utf8), Data(target.utf8), SHA256Hashing.hash(body)]
               + boundFields.map { Data("\($0.name):\($0.value)".utf8) })
    }

    /// The registration client data of `POST {prefix}/register`.
    public static func registration(challenge: Data, publicKey: Data, backing: String, integrity: [String]) -> Data {
        framed([Data("register-v1".utf8), challenge, publicKey, Data(backing.utf8), Data(integrity.joined(separator: ",").utf8)])
    }

    /// The client data of `POST {prefix}/renew` (`label` `renew-v1`) or `/forget` (`forget-v1`).
    public static func lifecycle(_ label: String, challenge: Data, keyId: Data) -> Data {
        framed([Data(label.utf8), challenge, keyId])
    }
}
