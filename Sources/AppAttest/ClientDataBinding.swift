/// The gateway's assertion client-data binding (DESIGN.md section 1), shared by the gateway (which
/// rebuilds client data from the request it received) and the simulator (which signs it).
///
/// Version 1 = a sequence of fields, each a 4-byte big-endian length followed by the bytes:
/// challenge (raw bytes), method (as on the request line), request-target (path and query exactly
/// as sent; `:path` in HTTP/2), SHA-256 of the body (32 raw bytes; SHA-256 of zero bytes when there
/// is no body), then each bound header field as `name:value` bytes, in the route's order.
/// Same framing as `client_data_v1` of shared/tools/ref_device.py.
public enum ClientDataBinding {
    /// SHA-256 of the empty body.
    public static let emptyBodySHA256: [UInt8] = [
        0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
        0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
    ]

    /// Client data v1 over bytes.
    /// - Parameters:
    ///   - challenge: the decoded challenge bytes.
    ///   - method: the request method bytes, e.g. `POST`.
    ///   - target: the request-target bytes (origin-form path and query).
    ///   - bodySHA256: SHA-256 of the (de-chunked) body, 32 bytes.
    ///   - boundFields: extra bound header fields, each already `name:value`.
    /// - Throws: `AppAttestError(.encodingInvalid)` when bodySHA256 is not 32 bytes or a field is
    ///   longer than 2^32-1 bytes.
    public static func v1(challenge: [UInt8], method: [UInt8], target: [UInt8], bodySHA256: [UInt8],
                          boundFields: [[UInt8]] = []) throws -> [UInt8] {
        guard bodySHA256.count == 32 else { throw AppAttestError(.encodingInvalid, "body digest must be 32 bytes") }
        var total = 16 + challenge.count + method.count + target.count + 32
        for field in boundFields { total += 4 + field.count }
        var out = [UInt8]()
        out.reserveCapacity(total)
        for field in [challenge, method, target, bodySHA256] + boundFields {
            guard let length = UInt32(exactly: field.count) else { throw AppAttestError(.encodingInvalid, "field too long") }
            out.append(UInt8(length >> 24)); out.append(UInt8(length >> 16 & 0xFF))
            out.append(UInt8(length >> 8 & 0xFF)); out.append(UInt8(length & 0xFF))
            out += field
        }
        return out
    }

    /// Client data v1 with text method, target and `(name, value)` bound fields (UTF-8, used verbatim:
    /// the caller chooses the case of header names).
    public static func v1(challenge: [UInt8], method: String, target: String, bodySHA256: [UInt8],
                          boundFields: [(name: String, value: String)] = []) throws -> [UInt8] {
        try v1(challenge: challenge, method: Array(method.utf8), target: Array(target.utf8), bodySHA256: bodySHA256,
               boundFields: boundFields.map { boundField(name: Array($0.name.utf8), value: Array($0.value.utf8)) })
    }

    /// The bytes of one bound field: `name ":" value`.
    public static func boundField(name: [UInt8], value: [UInt8]) -> [UInt8] {
        name + [UInt8(ascii: ":")] + value
    }
}
