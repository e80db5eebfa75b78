/// An HTTP/1.1 response received by `attestctl simulate` (RFC 9112): status, headers in order
/// (names as sent), and the body after removing the chunked framing.
struct SimulateHTTPResponse {
    /// Status code, e.g. 201.
    var status: Int
    /// Reason phrase as sent ("" when absent).
    var reason: String
    /// Header fields in order (trailer fields of a chunked body appended).
    var headers: [(name: String, value: String)]
    /// The body bytes (de-chunked).
    var body: [UInt8]

    /// The first value of header `name` (case-insensitive), or nil.
    func header(_ name: String) -> String? {
        let wanted = name.lowercased()
        return headers.first { $0.name.lowercased() == wanted }?.value
    }
}
